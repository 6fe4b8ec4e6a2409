"""Round 19: what round 19's generated probe (random mutations of every shipped scenario, cassette set and gates file,
a few thousand samples, classified) found that the rounds before had left open.

1. The model name was taken as given from every source — ``--model``, ``MEMHARNESS_MODEL``, a cassette set's
   ``cassette-meta.json`` ``model`` (and ``--api-base`` / ``api_base``, ``--set``, ``weights``) — whatever it held: an
   ESC, a NUL, a line separator, only spaces. It reached the run's outputs raw: every scenario that called the model
   ended "stale: … this run asks <name>", so ``summary.md`` held the terminal escape and ``junit.xml`` was not
   well-formed XML (a CI's test-report step fails to parse it). Now each is refused before any work: one line naming
   the option, the variable, or the file, its line and the field, exit 2, no run directory.
2. ``junit.xml`` wrote every message as it came: any character XML 1.0 cannot hold (C0 controls but tab, LF, CR;
   lone surrogates; U+FFFE, U+FFFF) made the whole document unreadable. Now such a character is written as its
   escape (``\\x1b``), whatever text reaches a test case.
3. ``validate`` judged a portable scenario's step-level system input (``check.system``, ``recall.options``,
   ``forget.options``) only when a memory had seed fields: ``validate --strict`` accepted a check the file system
   refuses, and every plain run ended "did not finish (error)". A ``cassette-meta.json`` naming no model said "no
   cassette-meta.json" (it was there), with no line.
4. A JSON member written twice in ``cassette-meta.json``, ``summary.json`` or a run file's row was read as Python's
   ``json`` reads it: the last kept, in silence.
5. CR LF line ends in a cassette set: a normalisation (read as LF), now documented and tested.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.replay._records import ScenarioResult
from harness.reporting import junit_xml
from tests.helpers import examples
from tests.hostile_cli._support import LOCATED, assert_one_line_error, cli

SETTINGS = settings(max_examples=examples(12), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
ROOT = Path(__file__).resolve().parents[2]
SET = ROOT / "scenarios" / "cassettes" / "qwen2.5-coder-1.5b"
SCENARIO = ROOT / "scenarios" / "model" / "pin-cassette-recall.yaml"
BAD_CHARS = st.sampled_from(["\x00", "\x07", "\x1b", "\x7f", "\x85", "\x9b", "\u2028", "\u2029", "\u202e", "\n", "\r",
                             "\t", "\ufeff", "\u200b", "\ufffe"])
BAD_NAME = st.one_of(
    st.tuples(st.text("abc/-.", max_size=6), BAD_CHARS, st.text("xyz", max_size=4)).map("".join),
    st.sampled_from([" ", "   ", "\t"]))


def _set_with_meta(tmp: Path, **fields: object) -> Path:
    target = tmp / "set"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(SET, target)
    meta = json.loads((target / "cassette-meta.json").read_text(encoding="utf-8"))
    meta.update(fields)
    (target / "cassette-meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return target


@SETTINGS
@given(name=BAD_NAME, field=st.sampled_from(["model", "api_base", "weights"]))
def test_cassette_meta_text_field_that_is_not_one_printable_line_is_located(
        tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], name: str, field: str) -> None:
    tmp = tmp_path_factory.mktemp("meta")
    target = _set_with_meta(tmp, **{field: name})
    o = cli(["run", "--no-gates", "--strategy", "model", "--cassettes", str(target), "--out", str(tmp / "out"),
             str(SCENARIO)], capsys)
    assert_one_line_error(o, mentions=("cassette-meta.json", f": {field}: "))
    m = LOCATED.match(o.err.strip())
    assert m is not None, o.err
    assert m["field"] == field, o.err
    line = (target / "cassette-meta.json").read_text(encoding="utf-8").split("\n")[int(m["line"]) - 1]
    assert f'"{field}"' in line, (o.err, line)
    assert not (tmp / "out").exists()


@SETTINGS
@given(name=BAD_NAME, how=st.sampled_from(["--model", "--api-base", "MEMHARNESS_MODEL"]))
def test_model_name_option_or_variable_that_is_not_one_printable_line_is_refused(
        tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], name: str, how: str) -> None:
    tmp = tmp_path_factory.mktemp("opt")
    args = ["run", "--no-gates", "--strategy", "model", "--cassettes", str(SET), "--out", str(tmp / "out"),
            str(SCENARIO)]
    environ = {"MEMHARNESS_MODEL": name} if how == "MEMHARNESS_MODEL" else None
    o = cli(args + ([how, name] if how.startswith("--") else []), capsys, environ)
    if environ and not name.strip():  # a variable of spaces only is unset (limits.md, "The environment"): the
        assert o.code == 0, o.err  # cassette's model (before: the model named " ", every call unrecorded)
        return
    assert_one_line_error(o, mentions=(how,))
    assert not (tmp / "out").exists()


@pytest.mark.parametrize("option", ["--model", "--api-base", "--set"])
def test_record_text_option_that_is_not_one_printable_line_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str) -> None:
    o = cli(["record", "--cassettes", str(tmp_path), option, "a\x1b[2Jb", str(SCENARIO)], capsys)
    assert_one_line_error(o, mentions=(option,))


def test_a_printable_model_name_is_still_taken(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The refusal is of control characters and blanks only: a name of another model is taken (and its calls are
    unrecorded: the run says so, exit 2 as before)."""
    target = _set_with_meta(tmp_path, model="openai/qwen2.5-coder-1.5b-instruct", weights="é ü — 1.5B")
    o = cli(["run", "--no-gates", "--strategy", "model", "--cassettes", str(target), "--out", str(tmp_path / "out"),
             str(SCENARIO)], capsys)
    assert o.code == 0, o.err


_XML_TEXT = st.text(st.characters(codec="utf-8") | st.sampled_from(["\ud800", "\udfff", "\ufffe", "\uffff"]),
                    max_size=30)


@settings(max_examples=examples(200), deadline=None, derandomize=True)
@given(error=_XML_TEXT, failure=_XML_TEXT, skipped=_XML_TEXT, which=st.sampled_from(["error", "failure", "skipped"]))
def test_junit_xml_is_well_formed_whatever_text_a_result_holds(error: str, failure: str, skipped: str,
                                                               which: str) -> None:
    result = ScenarioResult(
        scenario="s", strategy="heuristic", passed=which == "skipped", probes=(), trace_id="0" * 32, duration_ms=1.0,
        error=f"boom {error}" if which == "error" else None,
        failures=(f"f {failure}",) if which == "failure" else (),
        skipped=f"skip {skipped}" if which == "skipped" else None)
    text = junit_xml([result])
    text.encode("utf-8")
    root = ET.fromstring(text)
    case = root.find(".//testcase")
    assert case is not None
    assert case.find(which) is not None


PORTABLE = """description: a portable scenario whose step gives the system something only it can judge
tags: [portable]
strategies: [heuristic]
clock: 2026-03-02T09:00:00Z
facts:
  f1: {{type: project, match: ["billing"]}}
memories:
  - {{path: project/m.md, name: m, type: project, body: "billing runs on docker", facts: [f1]}}
steps:
  - check: {{facts_present: [f1]}}
  - {step}
"""
"""A portable scenario (no ``design``, no ``systems``, no seed fields) whose last step, on line 11, is ``{step}``."""


@SETTINGS
@given(step=st.sampled_from([
    "check: {system: {memories: 1}}", "check: {system: {fts_integrity: true}}", "check: {system: {episodes: 0}}",
    "check: {facts_present: [f1], system: {no_such_check: 1}}", "recall: {query: billing, options: {path: typed}}",
    "recall: {query: billing, options: {bogus: 1}}", "forget: {query: billing, options: {bogus: 1}}"]))
def test_portable_step_input_a_shipped_system_refuses_is_refused_by_validate(
        tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], step: str) -> None:
    """Step-level system input (``check.system``, ``recall.options``, ``forget.options``) in a portable scenario was
    judged by no system at ``validate`` unless a memory had seed fields: ``validate --strict`` accepted it, and every
    run ended "did not finish (error)" on the system that refuses it. Now validate asks every system a plain run gives
    the scenario, as it did for seed fields: whatever validate accepts, run can run."""
    tmp = tmp_path_factory.mktemp("portable")
    scenario = tmp / "s.yaml"
    scenario.write_text(PORTABLE.format(step=step), encoding="utf-8")
    v = cli(["validate", "--strict", str(scenario)], capsys)
    r = cli(["run", "--no-gates", "--out", str(tmp / "out"), str(scenario)], capsys)
    errored = "did not finish (error)" in r.err
    if v.code == 0:
        assert not errored, (step, r.err)
    else:
        assert v.code == 2, v.err
        for line in v.err.splitlines():
            m = LOCATED.match(line)
            assert m is not None, v.err
            assert m["line"] == "11", v.err


@pytest.mark.parametrize("how", ["absent", "null", "renamed"])
def test_cassette_meta_without_a_model_is_located_not_said_missing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str) -> None:
    """A ``cassette-meta.json`` that names no model (the field left out, null, or misspelt) was "no model named: pass
    --model MODEL (no cassette-meta.json in <set>)": a file that is there said absent, and no line. Now the file, the
    line of the field (1 when it is absent) and ``model``."""
    target = _set_with_meta(tmp_path)
    meta = json.loads((target / "cassette-meta.json").read_text(encoding="utf-8"))
    if how == "null":
        meta["model"] = None
    else:
        value = meta.pop("model")
        if how == "renamed":
            meta["modle"] = value
    (target / "cassette-meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    o = cli(["run", "--no-gates", "--strategy", "model", "--cassettes", str(target), "--out", str(tmp_path / "out"),
             str(SCENARIO)], capsys)
    assert_one_line_error(o, mentions=("cassette-meta.json:", ": model: missing"))
    m = LOCATED.match(o.err.strip())
    assert m is not None, o.err
    assert m["line"] == ("2" if how == "null" else "1"), o.err


def _twice(text: str, n: int) -> tuple[str, str, int]:
    """``text`` (JSON, one member per line or one object per line) with the ``n``-th member of a line written again
    on its line: (text, the member's key, the line)."""
    import re

    lines = text.split("\n")
    spots = [(i, m) for i, row in enumerate(lines) for m in re.finditer(r'"(\w+)": ("[^"\\]*"|-?[\d.]+|true|false|null)',
                                                                          row)]
    i, m = spots[n % len(spots)]
    lines[i] = lines[i][:m.end()] + ", " + m.group(0) + lines[i][m.end():]
    return "\n".join(lines), m.group(1), i + 1


@pytest.fixture(scope="module")
def a_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from harness.cli import main

    out = tmp_path_factory.mktemp("run") / "out"
    assert main(["run", "--no-gates", "--out", str(out), str(ROOT / "scenarios" / "recall" / "abstain-cjk.yaml")],
                environ={}) == 0
    return out


@SETTINGS
@given(which=st.sampled_from(["cassette-meta.json", "summary.json", "results.jsonl", "probes.jsonl"]),
       n=st.integers(0, 10_000))
def test_a_json_member_written_twice_is_located_not_the_last_kept(
        tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], a_run: Path, which: str,
        n: int) -> None:
    """A member written twice in ``cassette-meta.json``, ``summary.json`` or a run file's row was read as JSON reads
    it, the last kept without a word (the cassette's own lines refused it since round 14). Now one located line."""
    tmp = tmp_path_factory.mktemp("dup")
    if which == "cassette-meta.json":
        target = _set_with_meta(tmp)
        path = target / which
        args = ["run", "--no-gates", "--strategy", "model", "--cassettes", str(target), "--out", str(tmp / "out"),
                str(SCENARIO)]
    else:
        run = tmp / "run"
        shutil.copytree(a_run, run)
        path = run / which
        args = ["report", str(run), "--output", str(tmp / "r.html")]
    text, key, line = _twice(path.read_text(encoding="utf-8"), n)
    path.write_text(text, encoding="utf-8")
    o = cli(args, capsys)
    assert_one_line_error(o, mentions=(which, f"{key!r} twice"))
    m = LOCATED.match(o.err.strip())
    assert m is not None, o.err
    assert int(m["line"]) == line, (o.err, line)


@pytest.mark.parametrize("which", ["cassette.jsonl", "cassette-meta.json"])
def test_a_cassette_set_with_crlf_line_ends_replays_as_with_lf(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], which: str) -> None:
    """The probe's one normalisation of a cassette set (documented in limits.md): CR LF line ends read as LF (the CR
    is JSON whitespace), so a set saved by a Windows editor replays the same."""
    target = _set_with_meta(tmp_path)
    path = target / which
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    o = cli(["run", "--no-gates", "--strategy", "model", "--cassettes", str(target), "--out", str(tmp_path / "out"),
             str(SCENARIO)], capsys)
    assert o.code == 0, o.err
    assert "1 passed" in o.err, o.err
