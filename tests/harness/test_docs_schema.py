"""The docs in the repository: the generated CLI reference is up to date, the scenario JSON Schema accepts every
shipped scenario and rejects broken ones, and the README points only inside the repository."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cli import main
from harness.cli._parser import build_parser
from harness.cli._report_cmds import cli_markdown, scenario_schema
from harness.scenario import STRATEGY_NAMES
from tests.harness.conftest import REPO, SCENARIOS

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in the dev extra")


def _json_value(path: Path) -> Any:
    """YAML as JSON sees it (timestamps as ISO strings, as an editor's YAML language server reads them)."""
    return json.loads(json.dumps(yaml.safe_load(path.read_text()), default=lambda o: o.isoformat()))


@pytest.fixture(scope="module")
def validator() -> Any:
    schema = json.loads(scenario_schema())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("columns", ["57", "200"])
def test_stored_top_level_help_is_the_parsers_and_is_what_help_prints(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], columns: str) -> None:
    """``memharness --help`` is printed from harness/cli/top_help.txt without building the parser: it must be what
    the parser prints (at its fixed width, whatever the terminal), and ``-h`` must print the same."""
    from harness.cli import main
    from harness.cli._report_cmds import top_help_path

    monkeypatch.setenv("COLUMNS", columns)
    stored = top_help_path().read_text(encoding="utf-8")
    assert stored == build_parser().format_help(), "run `memharness docs`"
    for flag in ("--help", "-h"):
        assert main([flag]) == 0
        assert capsys.readouterr().out == stored
    with pytest.raises(SystemExit) as exit_:  # the parser itself (what a stale file would differ from)
        build_parser().parse_args(["--help"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == stored


def test_committed_cli_reference_is_up_to_date(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "57")  # the output must not depend on the terminal
    assert (REPO / "docs" / "cli.md").read_text() == cli_markdown(build_parser()), "run `memharness docs`"
    text = (REPO / "docs" / "cli.md").read_text()
    for command in ("run", "validate", "report", "compare", "merge", "fuzz", "bench locomo", "import locomo",
                    "cassettes status", "history", "schema", "docs"):
        assert f"## `memharness {command}`" in text or f"### `memharness {command}`" in text
    for flag in ("--out", "--jobs", "--shard"):
        row = next(line for line in text.splitlines() if line.startswith(f"| `{flag}` |"))
        assert len(row.split("|")[2].strip()) > 10  # has help text


def test_docs_check_fails_on_a_stale_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stale = tmp_path / "cli.md"
    stale.write_text("# old\n")
    assert main(["docs", "--check", "-o", str(stale)], environ={}) == 1
    assert main(["docs", "-o", str(stale)], environ={}) == 0
    assert main(["docs", "--check", "-o", str(stale)], environ={}) == 0


def test_every_shipped_scenario_validates_against_the_schema(validator: Any) -> None:
    files = sorted(f for f in SCENARIOS.rglob("*.yaml") if "cassettes" not in f.parts)
    assert len(files) > 40
    problems = {str(f): [e.message for e in validator.iter_errors(_json_value(f))] for f in files}
    assert {f: p for f, p in problems.items() if p} == {}


def test_schema_knows_the_registry_strategies() -> None:
    schema = json.loads(scenario_schema())
    assert schema["properties"]["strategies"]["items"]["enum"] == list(STRATEGY_NAMES)


@pytest.mark.parametrize(("mutate", "why"), [
    (lambda d: d.pop("steps"), "steps is required"),
    (lambda d: d.update(stepz=[]), "unknown top-level key"),
    (lambda d: d["steps"].append({"recall": {"expect": []}}), "recall without query"),
    (lambda d: d["steps"].append({"advance": "ten minutes"}), "bad duration"),
    (lambda d: d["steps"].append({"recall": {"query": "q"}, "advance": "1h"}), "two kinds in one step"),
    (lambda d: d.update(strategies=["gpt"]), "unknown strategy"),
    (lambda d: d["steps"].append({"dream": {"expect_status": "done"}}), "bad dream status"),
    (lambda d: d.update(memories=[{"path": "/etc/passwd.md", "type": "user"}]), "absolute memory path"),
    (lambda d: d.update(facts={"f": {"type": "user"}}), "fact without match"),
    (lambda d: d["steps"].append({"session": "s", "queued_behind": 3}), "a number as queue label"),
    (lambda d: d["steps"].append({"session": "s", "queued_behind": "#q"}), "a queue label starting with #"),
    (lambda d: d["steps"].append({"session": "s", "queued_behind": "q", "expect_trailing": {"runs": -1}}),
     "negative trailing runs"),
    (lambda d: d["steps"].append({"session": "s", "queued_behind": "q", "expect_trailing": {"colour": 1}}),
     "unknown expect_trailing key"),
])
def test_schema_rejects_broken_scenarios(validator: Any, mutate: Any, why: str) -> None:
    base = _json_value(SCENARIOS / "recall" / "type-user.yaml")
    assert validator.is_valid(base)
    broken = copy.deepcopy(base)
    mutate(broken)
    assert not validator.is_valid(broken), why


def test_memharness_schema_prints_the_shipped_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"], environ={}) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "memharness scenario"


def test_readme_and_docs_point_inside_the_repository() -> None:
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        text = path.read_text()
        assert "../shared" not in text, path
        for target in re.findall(r"\]\(((?!https?:)[^)#]+)\)", text):
            assert (path.parent / target).exists(), f"{path}: broken link {target}"


def test_every_cli_argument_says_what_it_is_and_its_default_once() -> None:
    import argparse

    missing, twice = [], []

    def walk(parser: argparse.ArgumentParser, name: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub_name, sub in action.choices.items():
                    walk(sub, f"{name} {sub_name}")
            elif not isinstance(action, argparse._HelpAction) and not action.help:
                missing.append(f"{name} {action.option_strings or action.dest}")
    walk(build_parser(), "memharness")
    for line in (REPO / "docs" / "cli.md").read_text().splitlines():
        if line.startswith("| `") and line.count("default") > 1 and "(default: `" in line:
            twice.append(line)
    assert not missing, missing
    assert not twice, twice


def _schema_keys(node: Any, out: set[str]) -> set[str]:
    if isinstance(node, dict):
        for key, value in node.get("properties", {}).items():
            out.add(key)
            _schema_keys(value, out)
        for key, value in node.items():
            if key != "properties":
                _schema_keys(value, out)
    elif isinstance(node, list):
        for value in node:
            _schema_keys(value, out)
    return out


def test_every_scenario_key_is_documented_and_every_documented_key_exists() -> None:
    """One source of truth for the format (issue 32): the loader's top-level keys are the schema's, every key the
    schema knows at any depth is in docs/scenarios.md (as `key`, inside a `{…}` form, or as the `<x>` of an
    `expect_<x>`), and every key the docs' tables name is one the schema (and so the loader) knows."""
    import re

    from harness.scenario._load import TOP_KEYS

    schema = json.loads((REPO / "harness" / "scenario" / "scenario.schema.json").read_text())
    assert set(schema["properties"]) == set(TOP_KEYS)
    doc = (REPO / "docs" / "scenarios.md").read_text()
    fences = re.findall(r"^```[^\n]*\n(.*?)^```", doc, re.S | re.M)  # examples: their keys count
    prose = re.sub(r"^```[^\n]*\n.*?^```", "", doc, flags=re.S | re.M)
    spans = " ".join(re.findall(r"`([^`]+)`", prose)) + " " + " ".join(re.findall(r"([a-z_]+):", " ".join(fences)))
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", spans))
    keys = _schema_keys(schema, set())
    undocumented = sorted(k for k in keys if k not in words and k.removeprefix("expect_") not in words)
    assert not undocumented, undocumented
    tabled = set(re.findall(r"^\| `([a-z_]+)`", doc, re.M))
    assert tabled <= keys, sorted(tabled - keys)


def test_every_metric_a_run_reports_is_documented(tmp_path: Path) -> None:
    from harness.cli import main

    out = tmp_path / "run"
    assert main(["run", str(REPO / "scenarios" / "recall" / "multi-fact.yaml"), str(REPO / "scenarios" / "dream" /
                 "gates-pass.yaml"), str(REPO / "scenarios" / "forget" / "one-entry-of-many.yaml"), "--no-gates",
                 "--out", str(out)], environ={}) == 0
    summary = json.loads((out / "summary.json").read_text())
    doc = (REPO / "docs" / "metrics.md").read_text()
    names = {name for block in summary["strategies"].values() for name in block["metrics"]}
    assert names
    assert not sorted(n for n in names if f"`{n}`" not in doc)


def test_the_schema_and_the_loader_accept_the_same_keys() -> None:
    """The JSON Schema is checked against the loader's own key lists, object by object, so neither drifts."""
    from harness.scenario import _load, _load_more, _memories

    schema = json.loads((REPO / "harness" / "scenario" / "scenario.schema.json").read_text())
    steps = {alt["required"][0]: alt for alt in schema["properties"]["steps"]["items"]["oneOf"]
             if len(alt.get("required", [])) == 1}
    pairs = {
        "top level": (schema["properties"], _load.TOP_KEYS),
        "memories[]": (schema["properties"]["memories"]["items"]["properties"], _memories._MEMORY_KEYS),
        "recall": (steps["recall"]["properties"]["recall"]["properties"], _load_more._RECALL_KEYS),
        "check": (steps["check"]["properties"]["check"]["properties"], _load_more._CHECK_KEYS),
        "expect_trailing": (steps["session"]["properties"]["expect_trailing"]["properties"], _load_more.TRAILING_KEYS),
    }
    for where, (in_schema, in_loader) in pairs.items():
        assert set(in_schema) == set(in_loader), (where, set(in_schema) ^ set(in_loader))
