"""Metrics of your own (issue 31: extension points): a plugin registers a metric; memharness scores it on every
probe of its kind, shows it like a built-in in every output, compares it probe by probe, and gates on it; a broken
plugin is one clear line. The example plugin in examples/ is also installed and found through its entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import harness.plugins
from harness.cli import main
from harness.scenario import _registry
from tests.harness.conftest import SCENARIOS

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "memharness-example-plugin"
MODULE = EXAMPLE / "memharness_example_plugin" / "__init__.py"
PATHS = [str(SCENARIOS / "recall" / "models-01-payments.yaml"), str(SCENARIOS / "recall" / "type-user.yaml")]


@pytest.fixture(autouse=True)
def _own_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(harness.plugins, "REGISTRY", {})  # a test's plugins never leak into another's outputs
    monkeypatch.delenv("MEMHARNESS_PLUGINS", raising=False)
    specs, rankers = dict(_registry._SPECS), dict(_registry.RANKER_PLUGINS)
    yield
    _registry._SPECS.clear()
    _registry._SPECS.update(specs)
    _registry.RANKER_PLUGINS.clear()
    _registry.RANKER_PLUGINS.update(rankers)


def _run(tmp_path: Path, *extra: str, gates: str | None = None) -> tuple[int, Path]:
    out = tmp_path / "run"
    strategy = [] if "--strategy" in extra else ["--strategy", "heuristic,model"]  # given twice is refused
    args = ["run", *PATHS, *strategy, "--system", "reference", "--out", str(out), *extra]
    if gates is None:
        args.append("--no-gates")
    else:
        (tmp_path / "gates.toml").write_text(gates)
        args += ["--gates", str(tmp_path / "gates.toml")]
    return main(args, environ={}), out


def test_a_plugin_metric_is_scored_shown_compared_and_stored(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(tmp_path, "--plugin", str(MODULE))
    assert code == 0
    terminal = capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    for strategy in ("heuristic", "model"):
        value = summary["strategies"][strategy]["metrics"]["recall.first_pick_relevant"]
        assert 0.0 <= value <= 1.0
    probes = [json.loads(line) for line in (out / "probes.jsonl").read_text().splitlines()]
    scored = [p for p in probes if p["kind"] == "recall" and "plugin.first_pick_relevant" in p["metrics"]]
    assert scored
    assert all(p["metrics"]["plugin.first_pick_relevant"] is None for p in scored if not p["expected"])
    assert any(c["metric"] == "recall.first_pick_relevant" for c in summary["comparisons"])  # paired, like f1
    assert "recall.first_pick_relevant" in terminal
    assert "| recall.first_pick_relevant |" in (out / "summary.md").read_text()
    assert ">recall.first_pick_relevant<" in (out / "report.html").read_text()


def test_a_gate_can_name_a_plugin_metric_and_fail_on_it(tmp_path: Path) -> None:
    gates = '[[gate]]\nmetric = "recall.extra_picks"\nstrategy = "heuristic"\nmax = 0\n'
    code, out = _run(tmp_path, "--plugin", str(MODULE), gates=gates)
    assert code == 1  # the heuristic selects memories that cover nothing expected
    [gate] = json.loads((out / "summary.json").read_text())["gates"]
    assert (gate["name"], gate["passed"]) == ("heuristic recall.extra_picks <= 0.0", False)
    harness.plugins.REGISTRY.clear()  # a later process that does not load the plugin
    assert main(["run", *PATHS, "--strategy", "heuristic", "--gates", str(tmp_path / "gates.toml"), "--out",
                 str(tmp_path / "no-plugin")], environ={}) == 2  # without the plugin the metric is unknown


def test_a_broken_plugin_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad_metric.py"
    bad.write_text("from harness.plugins import metric\n\n@metric('recall.boom')\ndef boom(probe):\n"
                   "    return 1 / 0\n")
    assert _run(tmp_path, "--plugin", str(bad))[0] == 2
    err = capsys.readouterr().err.strip()
    assert len([line for line in err.splitlines() if line.startswith("memharness:")]) == 1
    assert "Traceback" not in err
    assert "plugin metric recall.boom" in err
    assert "ZeroDivisionError" in err
    assert "step 0" in err
    assert main(["run", *PATHS, "--plugin", "no_such_plugin_module", "--out", str(tmp_path / "x")], environ={}) == 2
    assert "--plugin no_such_plugin_module: cannot import" in capsys.readouterr().err


@pytest.mark.slow  # builds and installs the example package (pip, setuptools)
def test_the_installed_example_plugin_is_found_through_its_entry_point(tmp_path: Path) -> None:
    target = tmp_path / "site"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
                          str(EXAMPLE)], capture_output=True, text=True, timeout=600, check=False)
    assert pip.returncode == 0, pip.stderr[-2000:]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "MEMHARNESS_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(target), *filter(None, [env.get("PYTHONPATH")])])
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    out = tmp_path / "run"
    paths = [str(SCENARIOS / "recall" / "multi-fact.yaml"), str(SCENARIOS / "recall" / "type-feedback.yaml")]
    run = subprocess.run([sys.executable, "-m", "harness", "run", *paths, "--strategy", "heuristic,overlap", "--system",
                          "reference", "--out", str(out), "--no-gates"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    strategies = json.loads((out / "summary.json").read_text())["strategies"]
    assert {"recall.first_pick_relevant", "recall.extra_picks"} <= set(strategies["heuristic"]["metrics"])
    assert strategies["overlap"]["metrics"]["recall.f1"] > 0  # the plugin's ranker recalled, graded like a built-in


def test_a_lower_is_better_plugin_metric_reads_the_right_way_round() -> None:
    from harness.evaluation import Gate, compare
    from harness.evaluation._gates import _regression
    from harness.plugins import metric
    from harness.reporting._view import effect_words

    metric("recall.wrong_picks", lower_is_better=True)(lambda probe: None)
    rising = compare("base", "cand", "recall.wrong_picks", [0.0] * 20, [1.0] * 10 + [2.0] * 10,
                     [True] * 20, [True] * 20)
    assert rising.significant
    assert effect_words(rising).startswith("worse")  # more wrong picks is worse, although the delta is positive
    falling = compare("base", "cand", "recall.wrong_picks", [1.0] * 10 + [2.0] * 10, [0.0] * 20,
                      [True] * 20, [True] * 20)
    assert effect_words(falling).startswith("better")
    gate = Gate("recall.wrong_picks", "cand", max_drop=0.0, vs="base")
    fired, quiet = _regression(gate, [rising], None), _regression(gate, [falling], None)
    assert (fired.passed, quiet.passed) == (False, True)


RANKER = """
from harness.plugins import ranker

@ranker("first-word", description="memories containing the query's first word")
def first_word(query, docs):
    word = query.split()[0].lower()
    return [1.0 if word in f"{d.title} {d.description} {d.text}".lower() else BAD for d in docs]
"""


def test_a_plugin_strategy_ranks_recall_like_a_built_in_and_is_compared(tmp_path: Path) -> None:
    (tmp_path / "first_word.py").write_text(RANKER.replace("BAD", "0.0"))
    code, out = _run(tmp_path, "--plugin", str(tmp_path / "first_word.py"))
    assert code == 0
    code, out = _run(tmp_path, "--plugin", str(tmp_path / "first_word.py"), "--strategy", "heuristic,first-word")
    summary = json.loads((out / "summary.json").read_text())
    assert "first-word" in summary["strategies"]
    probes = [json.loads(line) for line in (out / "probes.jsonl").read_text().splitlines()]
    mine = [p for p in probes if p["strategy"] == "first-word" and p["kind"] == "recall"]
    assert mine
    assert all(p["strategy_used"] in ("first-word", "none") for p in mine)
    assert any(c["a"] == "heuristic" and c["b"] == "first-word" for c in summary["comparisons"])


@pytest.mark.parametrize(("bad", "message"), [
    ("float('nan')", "plugin strategy first-word returned"), ("'x'", "plugin strategy first-word returned"),
    ("1 / 0", "plugin strategy first-word failed: ZeroDivisionError")])
def test_a_broken_plugin_strategy_is_an_error_naming_it(tmp_path: Path, bad: str, message: str) -> None:
    (tmp_path / "first_word.py").write_text(RANKER.replace("BAD", bad))
    code, out = _run(tmp_path, "--plugin", str(tmp_path / "first_word.py"), "--strategy", "first-word")
    assert code == 2
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert results
    assert all(message in r["error"] for r in results if r["error"]), [r["error"] for r in results]


def test_a_system_that_does_not_declare_a_plugin_strategy_skips_it_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "first_word.py").write_text(RANKER.replace("BAD", "0.0"))
    out = tmp_path / "run"
    code = main(["run", str(SCENARIOS / "recall" / "multi-fact.yaml"), "--plugin", str(tmp_path / "first_word.py"),
                 "--strategy", "first-word", "--system", "sqlite", "--out", str(out), "--no-gates"], environ={})
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert code == 0
    assert [r["skipped"] for r in results] == ["sqlite implements strategies bm25, heuristic, model, not first-word"]


def test_validate_accepts_a_scenario_naming_a_plugin_strategy_that_run_accepts(tmp_path: Path,
                                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """docs/plugins.md: a scenario's `strategies:` may name a plugin's ranker. `run` loaded $MEMHARNESS_PLUGINS and
    accepted it; `validate` loaded no plugin and refused the same file (exit 2)."""
    (tmp_path / "first_word.py").write_text(RANKER.replace("BAD", "0.0"))
    scenario = tmp_path / "suite" / "mine.yaml"
    scenario.parent.mkdir()
    source = (SCENARIOS / "recall" / "multi-fact.yaml").read_text()
    source = source.replace("require: {heuristic: {recall: 1, precision: 0.66}, model: {recall: 0.5, precision: 0.5}}",
                            "measure: true")  # floors for strategies this copy never runs are refused (round 17)
    assert "require:" not in source
    scenario.write_text("strategies: [first-word]\n" + "\n".join(line for line in source.splitlines()
                                                                 if not line.startswith("strategies:")) + "\n")
    env = {"MEMHARNESS_PLUGINS": str(tmp_path / "first_word.py")}
    assert main(["validate", str(scenario.parent)], environ=env) == 0, capsys.readouterr().err
    assert main(["run", str(scenario.parent), "--system", "reference", "--no-gates", "--out", str(tmp_path / "run")],
                environ=env) == 0


@pytest.mark.parametrize("name", ["heuristic", "none", "Upper", "has space", "model:x", ""])
def test_a_plugin_strategy_name_is_checked(name: str) -> None:
    from harness.errors import HarnessError

    with pytest.raises(HarnessError, match=f"plugin strategy {name!r}"):
        harness.plugins.ranker(name)
