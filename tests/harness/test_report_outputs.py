"""CI outputs (annotations, $GITHUB_STEP_SUMMARY), run history, the terminal closing table and the report's
verdict/flags on small runs."""

from __future__ import annotations

import dataclasses
import os
import re
import sqlite3
from pathlib import Path

import pytest

from harness.cli import main
from harness.evaluation import evaluate_run
from harness.replay import Probe, ScenarioResult
from harness.reporting import failure_annotations, read_history, render_report, verdict
from tests.harness.conftest import SCENARIOS

FAILING = """\
description: a check that cannot hold
facts: {t: {type: user, match: [vim]}}
memories: [{path: user/a.md, type: user, body: uses vim}]
steps:
  - advance: 1h
  - check: {facts_absent: [t]}
"""


def test_annotations_carry_the_yaml_line() -> None:
    results = [
        ScenarioResult("a", "heuristic", False, ("step 1 (check, line 6): fact t is still covered", "step 3 "
                       "(recall, line 12): recall 0.5 < 1"), (), "t1", path="suite/a.yaml"),
        ScenarioResult("b", "model", False, (), (), "t2", error="suite/b.yaml:9: steps[0].recall: expected a 'query'",
                       path="suite/b.yaml"),
        ScenarioResult("c", "heuristic", False, ("something without a line",), (), "t3", path="suite/c.yaml"),
        ScenarioResult("d", "heuristic", True, (), (), "t4", path="suite/d.yaml"),
    ]
    got = [(a.file, a.line) for a in failure_annotations(results)]
    assert got == [("suite/a.yaml", 6), ("suite/a.yaml", 12), ("suite/b.yaml", 9), ("suite/c.yaml", None)]
    line = failure_annotations(results)[0].github()
    assert line.startswith("::error file=suite/a.yaml,line=6,title=memharness a [heuristic]::")
    assert failure_annotations(results)[3].github().startswith("::error file=suite/c.yaml,title=")
    multi = ScenarioResult("e", "h", False, ("step 0 (check, line 2): one\nsecond line 100%",), (), "t", path="e.yaml")
    assert failure_annotations([multi])[0].github().endswith("one%0Asecond line 100%25")
    # a scenario error (a cassette miss) names its step and line after "<id> [<strategy>] ": the annotation has the
    # line too, as failure_annotations promises (it had only the file)
    miss = ScenarioResult("m", "model@sqlite", False, (), (), "t5", path="suite/m.yaml",
                          error="m [model] step 0 (recall, line 10): unrecorded model call in m step 0 (purpose x)")
    assert failure_annotations([miss])[0].github().startswith(
        "::error file=suite/m.yaml,line=10,title=memharness m [model@sqlite]::step 0 (recall, line 10): ")


def test_failing_run_annotates_and_writes_the_step_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "suite" / "bad.yaml"
    scenario.parent.mkdir()
    scenario.write_text(FAILING)
    step_summary = tmp_path / "step-summary.md"
    step_summary.write_text("previous step\n")
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)  # main() reads the environment it is given, not the process's
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.chdir(tmp_path)
    code = main(["run", str(scenario), "--out", str(tmp_path / "reports" / "run"), "--no-gates"],
                environ={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(step_summary)})
    assert code == 1
    out = capsys.readouterr().out
    assert "::error file=suite/bad.yaml,line=6,title=memharness bad [heuristic]::step 1 (check, line 6): fact t" in out
    text = step_summary.read_text()
    assert text.startswith("previous step\n## memharness — FAILED")  # appended, not overwritten
    assert "### Failed scenarios" in text
    # the scenario names no system: it replays against both shipped systems, and fails on both
    assert "FAILED — 0/2 scenario runs passed, 2 failed" in text
    assert "title=memharness bad [heuristic@sqlite]::" in out


def test_no_annotations_outside_github(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "bad.yaml"
    scenario.write_text(FAILING)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")  # the process's: main() reads only the environment it is given
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "never-written.md"))
    assert main(["run", str(scenario), "--out", str(tmp_path / "run"), "--no-gates"], environ={}) == 1
    assert not (tmp_path / "never-written.md").exists()
    captured = capsys.readouterr()
    assert "::error" not in captured.out
    assert "FAILED: bad [heuristic]" in captured.out
    # off a TTY: one progress line per strategy, not one per scenario
    progress = [line for line in captured.err.splitlines() if line.startswith("replayed ")]
    assert progress[:2] == ["replayed heuristic: 1 scenario run(s), 1 failed",
                            "replayed heuristic@sqlite: 1 scenario run(s), 1 failed"]
    # the wall time is the whole replay's, once (each strategy's line printed the same total as if it were its own)
    assert re.fullmatch(r"replayed 2 scenario run\(s\) in [0-9.e+-]+ s", progress[2])
    assert len(progress) == 3


def test_three_runs_make_a_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("MEMHARNESS_HISTORY", raising=False)
    scenario = str(SCENARIOS / "recall" / "type-user.yaml")
    for n in range(3):
        assert main(["run", scenario, "--out", str(tmp_path / "reports" / f"run{n}"), "--no-gates"], environ={}) == 0
    db = tmp_path / "reports" / "history.sqlite"
    assert len(read_history(db)) == 3
    capsys.readouterr()
    assert main(["history", "--db", str(db)], environ={}) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"3 run(s) in {db}")
    rows = [line for line in out.splitlines() if re.match(r"^[0-9a-f]{12}  ", line)]
    assert len(rows) == 3
    assert "trend heuristic recall.f1:" in out
    html = (tmp_path / "reports" / "run2" / "report.html").read_text()
    table = re.search(r'<table id="history">(.*?)</table>', html, re.S)
    assert table is not None
    assert table[1].count("<tr>") == 4  # header + three runs
    assert '"trend"' in html
    assert "Trend over the last 3 run(s)" in html


def test_a_corrupt_history_warns_and_never_fails_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "history.sqlite"
    db.write_bytes(b"this is not a database" * 100)
    monkeypatch.setenv("MEMHARNESS_HISTORY", str(db))
    assert main(["run", str(SCENARIOS / "recall" / "type-user.yaml"), "--out", str(tmp_path / "run"), "--no-gates"],
                environ={}) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning: run history" in line]
    assert warnings
    assert str(db) in warnings[0]
    assert (tmp_path / "run" / "report.html").exists()


def test_history_write_is_one_transaction(tmp_path: Path) -> None:
    from harness.reporting import append_run

    results = [ScenarioResult("s", "heuristic", True, (), (Probe("s", 0, "recall", "heuristic", metrics={"f1": 1.0}),),
                              "t")]
    summary = evaluate_run(results, ["heuristic"], run_id="r1")
    db = tmp_path / "h.sqlite"
    assert append_run(db, summary)
    assert append_run(db, summary)  # the same run again replaces, never duplicates
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM runs").fetchone() == (1,)
    os.chmod(db, 0o444)
    if os.geteuid() != 0:  # root ignores file modes
        assert not append_run(db, evaluate_run(results, ["heuristic"], run_id="r2"), warn=lambda *_: None)
        assert [r.run_id for r in read_history(db)] == ["r1"]


def _probe(step: int, strategy: str, selected: tuple[str, ...], covered: tuple[str, ...], recall: float | None,
           expected: tuple[str, ...] = ("f",)) -> Probe:
    return Probe("s", step, "recall", strategy, query=f"q{step}", selected=selected, expected=expected,
                 covered=covered, metrics={"recall": recall, "precision": 1.0 if not selected else 0.5})


def test_report_flags_recall_zero_passes_and_explains_empty_selections() -> None:
    probes = (_probe(0, "heuristic", (), (), 0.0), _probe(1, "heuristic", ("a.md",), ("f",), 1.0))
    results = [ScenarioResult("s", "heuristic", True, (), probes, "t", path="s.yaml")]
    summary = evaluate_run(results, ["heuristic"])
    html = render_report(summary, results, [])
    assert 'data-flag="recall-zero"' in html
    assert "passes with 1 of 2 recall probes at recall 0" in html
    assert "Empty selection: precision is defined as 1" in html
    assert "missed: nothing was selected" in html
    assert '<span class="nodata">no data</span>' in html  # e.g. llm metrics of a run without model calls
    assert verdict(summary, results).status == "pass"


def test_report_shows_each_recall_probes_k() -> None:
    probes = (dataclasses.replace(_probe(0, "heuristic", ("a.md",), ("f",), 1.0), k=3), _probe(1, "heuristic", (), (), 0.0))
    results = [ScenarioResult("s", "heuristic", True, (), probes, "t", path="s.yaml")]
    html = render_report(evaluate_run(results, ["heuristic"]), results, [])
    assert html.count("(the selection cap and nDCG cutoff)") == 1
    assert "k = 3 (the selection cap and nDCG cutoff)" in html


def test_verdict_is_incomplete_when_a_scenario_errors_and_fail_when_one_fails() -> None:
    ok = ScenarioResult("a", "heuristic", True, (), (), "t1")
    bad = ScenarioResult("b", "heuristic", False, ("step 0 (check, line 3): no",), (), "t2")
    err = ScenarioResult("c", "heuristic", False, (), (), "t3", error="boom")
    assert verdict(evaluate_run([ok, bad], ["heuristic"]), [ok, bad]).status == "fail"
    v = verdict(evaluate_run([ok, err], ["heuristic"]), [ok, err])
    assert v.status == "incomplete"
    assert v.line.startswith("INCOMPLETE — 1/2 scenario runs passed")


def _recall_results(strategy: str, hits: list[bool]) -> list[ScenarioResult]:
    probes = tuple(_probe(i, strategy, ("a.md",), ("f",) if hit else (), 1.0 if hit else 0.0) for i, hit in enumerate(hits))
    probes = tuple(Probe(p.scenario, p.step, "recall", strategy, query=p.query, selected=p.selected, expected=p.expected,
                         covered=p.covered, metrics={**p.metrics, "f1": p.metrics["recall"]}) for p in probes)
    return [ScenarioResult("s", strategy, True, (), probes, "t", path="s.yaml")]


def test_verdict_against_a_baseline_says_better_worse_or_no_change_in_words() -> None:
    from harness.evaluation import compare_runs
    from harness.reporting import summary_markdown

    base = _recall_results("heuristic", [False] * 20)
    same = compare_runs(base, base)
    v = verdict(evaluate_run(base, ["heuristic"], baseline=same), base)
    assert v.details[0].startswith("against the baseline: heuristic: no detectable change — recall.f1 +0.000 ")
    assert "not significant; the smallest detectable effect is ±" in v.details[0]
    better = _recall_results("heuristic", [True] * 20)
    summary = evaluate_run(better, ["heuristic"], baseline=compare_runs(base, better))
    assert verdict(summary, better).details[0].startswith("against the baseline: heuristic: better — recall.f1 +1.000")
    md = summary_markdown(summary, better)
    assert "### Against baseline" in md
    assert "| heuristic | recall.f1 | 0 | 1 | +1 |" in md
    assert "probe(s) changed against the baseline" in md
    html = render_report(summary, better, [])
    assert 'class="delta up"' in html
    worse = compare_runs(better, base)
    assert verdict(evaluate_run(base, ["heuristic"], baseline=worse), base).details[0].startswith(
        "against the baseline: heuristic: worse — ")


def test_outputs_follow_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        assert main(["run", str(SCENARIOS / "recall" / "type-user.yaml"), "--out", str(tmp_path / "run"), "--no-gates"],
                    environ={}) == 0
    finally:
        os.umask(old)
    for path in (tmp_path / "run" / "report.html", tmp_path / "run" / "summary.md", tmp_path / "history.sqlite"):
        assert path.stat().st_mode & 0o777 == 0o640, path


def test_a_failed_gate_is_a_junit_failure_and_an_annotation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    # every scenario passes; only a gate fails (as a baseline-only regression does): the build must not look green
    import xml.etree.ElementTree as ET

    gates = tmp_path / "gates.toml"
    gates.write_text('[[gate]]\nmetric = "recall.recall"\nstrategy = "heuristic"\nmin = 1.01\n'
                     '[[gate]]\nmetric = "recall.recall"\nstrategy = "model"\nmin = 0.5\n', encoding="utf-8")
    path = SCENARIOS / "recall" / "type-user.yaml"
    assert main(["run", str(path), "--system", "reference", "--gates", str(gates), "--out", str(tmp_path / "o")],
                environ={"GITHUB_ACTIONS": "true"}) == 1
    out = capsys.readouterr().out
    line = r"^::error title=memharness gate heuristic recall\.recall >= 1\.01::gate failed: .*\(value 1\)$"
    assert re.search(line, out, re.M), out
    suites = {s.get("name"): s for s in ET.parse(tmp_path / "o" / "junit.xml").getroot()}
    gate_suite = suites["memharness.gates"]
    assert (gate_suite.get("tests"), gate_suite.get("failures"), gate_suite.get("skipped")) == ("2", "1", "1")
    failed = [c for c in gate_suite if c.find("failure") is not None]
    assert len(failed) == 1
    assert "heuristic" in str(failed[0].get("name"))
    assert all(s.get("failures") == "0" for name, s in suites.items() if name != "memharness.gates")


def test_history_is_keyed_by_systems_and_strategies_and_shards_leave_none(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("MEMHARNESS_HISTORY", raising=False)
    scenario = str(SCENARIOS / "recall" / "type-user.yaml")
    reports = tmp_path / "reports"
    for n, strategy in enumerate(("heuristic", "heuristic", "bm25")):
        assert main(["run", scenario, "--strategy", strategy, "--system", "reference", "--out",
                     str(reports / f"run{n}"), "--no-gates"], environ={}) == 0
    db = reports / "history.sqlite"
    runs = read_history(db)
    assert [r.key for r in runs] == ["reference | heuristic", "reference | heuristic", "reference | bm25"]
    assert len(read_history(db, key="reference | heuristic")) == 2
    html = (reports / "run2" / "report.html").read_text()  # the bm25 run's trend is its own, not heuristic's
    table = re.search(r'<table id="history">(.*?)</table>', html, re.S)
    assert table is not None
    assert table[1].count("<tr>") == 2  # header + the one bm25 run
    capsys.readouterr()
    assert main(["history", "--db", str(db)], environ={}) == 0
    out = capsys.readouterr().out
    assert "systems | strategies" in out
    assert "over 1 runs" not in out  # the last key (bm25) has one run: no trend line mixes it with heuristic's
    # a shard is not a suite run: it writes no history beside the shard directories that merge reads
    shards = tmp_path / "shards"
    assert main(["run", str(SCENARIOS / "recall"), "--shard", "1/2", "--strategy", "heuristic", "--out",
                 str(shards / "1"), "--no-gates"], environ={}) in (0, 1)
    assert not (shards / "history.sqlite").exists()


def test_a_run_whose_directory_fails_is_not_in_the_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Round 7: the history row was written before the run directory, so a full disk left a recorded run that
    does not exist. Now the row comes after the directory is whole."""
    import errno

    from harness.reporting import _rundir

    db = tmp_path / "history.sqlite"
    monkeypatch.setenv("MEMHARNESS_HISTORY", str(db))

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_rundir, "_write_dir", full)
    scenario = str(SCENARIOS / "recall" / "type-user.yaml")
    assert main(["run", scenario, "--out", str(tmp_path / "run"), "--no-gates"], environ={}) == 2
    assert not (tmp_path / "run").exists()
    assert read_history(db) == []
    monkeypatch.undo()
    monkeypatch.setenv("MEMHARNESS_HISTORY", str(db))
    assert main(["run", scenario, "--out", str(tmp_path / "run"), "--no-gates"], environ={}) == 0
    assert len(read_history(db)) == 1


def test_a_run_id_used_twice_keeps_both_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Round 7: MEMHARNESS_RUN_ID reused (a CI re-running a job) replaced the first run's history row."""
    db = tmp_path / "history.sqlite"
    monkeypatch.setenv("MEMHARNESS_HISTORY", str(db))
    scenario = str(SCENARIOS / "recall" / "type-user.yaml")
    for n in range(3):
        assert main(["run", scenario, "--out", str(tmp_path / f"run{n}"), "--no-gates"],
                    environ={"MEMHARNESS_RUN_ID": "ci-1234"}) == 0
    runs = read_history(db)
    assert [r.run_id for r in runs] == ["ci-1234", "ci-1234~2", "ci-1234~3"]
    assert len({r.created_at for r in runs}) == 3
    html = (tmp_path / "run2" / "report.html").read_text(encoding="utf-8")
    assert "Trend over the last 3 run(s)" in html
