"""One run, every output, the same facts (issue 32: the banner said "26/26 gates passed (24 skipped)" while the
gates section said "50 passing gate(s)"; p-values printed as "p = 0" in one place and a bootstrap p under a
"sign-flip" heading in another). The terminal, summary.md, summary.json, JUnit and the report must agree on the
verdict, the gate counts (passed, failed, skipped), each strategy's headline metric and every comparison's p."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html import escape
from pathlib import Path

import pytest

from harness.cli import main
from harness.evaluation import p_text
from tests.harness.conftest import SCENARIOS

GATES = """
[[gate]]
metric = "scenarios.failed"
max = 0

[[gate]]
metric = "recall.f1"
strategy = "heuristic"
min = 0.05

[[gate]]
metric = "recall.f1"
strategy = "embedding"
min = 0.05

[[gate]]
metric = "recall.precision"
strategy = "model"
min = 0.99
"""


def test_every_output_tells_the_same_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "gates.toml").write_text(GATES)
    out = tmp_path / "run"
    paths = [str(SCENARIOS / "recall" / "models-01-payments.yaml"), str(SCENARIOS / "recall" / "type-user.yaml")]
    code = main(["run", *paths, "--strategy", "heuristic,model", "--system", "reference", "--gates",
                 str(tmp_path / "gates.toml"), "--out", str(out)], environ={})
    terminal = capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    gates = summary["gates"]
    failed = sum(not g["passed"] and not g["skipped"] for g in gates)
    skipped = sum(g["skipped"] for g in gates)
    judged = len(gates) - skipped
    assert (failed, skipped) == (1, 1)  # the model precision floor fails; the embedding gate is not in this run
    assert code == 1

    banner = f"{judged - failed}/{judged} gates passed ({skipped} skipped)"
    md = (out / "summary.md").read_text()
    html = (out / "report.html").read_text()
    assert banner in terminal
    assert banner in md
    assert banner in html
    assert f"{judged - failed} passing gate(s)" in html
    assert f"{skipped} skipped gate(s)" in html
    assert md.count("**FAIL**") == failed

    junit = ET.parse(out / "junit.xml").getroot()
    suite = next(s for s in junit.iter("testsuite") if s.get("name") == "memharness.gates")
    counts = (int(suite.get("tests", "0")), int(suite.get("failures", "0")), int(suite.get("skipped", "0")))
    assert counts == (len(gates), failed, skipped)

    for strategy, block in summary["strategies"].items():  # the headline metric, rounded once, everywhere
        f1 = block["metrics"]["recall.f1"]
        shown = f"{f1:.3g}"
        row = next(line for line in md.splitlines() if line.startswith("| recall.f1 |"))
        assert shown in row, (strategy, row)
        assert re.search(rf"recall\.f1\s.*{re.escape(shown)}", terminal), strategy

    assert summary["comparisons"]
    for c in summary["comparisons"]:  # one p-value format: never "p = 0", the same text in every output
        p = p_text(c["p_value"])
        assert f"| {p} |" in md
        assert p_text(c["p_value"], prefix="p") in terminal
        assert f">{escape(p)}<" in html
    assert "p = 0 " not in terminal
    assert "p = 0)" not in terminal
    assert "sign-flip" not in html
    for strategy, block in summary["strategies"].items():  # one percentile: the chart's label is the summary's
        p95 = block["metrics"]["latency.recall_ms.p95"]
        if p95 is not None:
            assert f"{strategy} (p50 {block['metrics']['latency.recall_ms.p50']:.3g} ms, p95 {p95:.3g} ms)" in html


def test_every_output_gives_the_same_verdict_against_a_baseline(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A run that is worse than its baseline (a check flipped) while its F1 rose significantly: the terminal said
    "worse" and summary.md "better"; every output now renders the evaluation's one verdict per strategy."""
    scenario = tmp_path / "s.yaml"
    source = (SCENARIOS / "recall" / "multi-fact.yaml").read_text()
    scenario.write_text(source)
    assert main(["run", str(scenario), "--system", "reference", "--no-gates", "--out", str(tmp_path / "base")],
                environ={}) == 0
    # the candidate: the same scenario with a query no memory answers, so a passing check now fails
    extra = "  - recall: {query: 'zzqx', expect: [], require: {abstention: 1.0}}\n"
    scenario.write_text(source.replace("steps:\n", "steps:\n" + extra, 1))
    capsys.readouterr()
    main(["run", str(scenario), "--system", "reference", "--no-gates", "--baseline", str(tmp_path / "base"),
          "--out", str(tmp_path / "cand")], environ={})
    terminal = capsys.readouterr().out
    summary = json.loads((tmp_path / "cand" / "summary.json").read_text())
    verdicts = [v["text"] for v in summary["baseline"]["verdicts"]]
    assert verdicts
    md = (tmp_path / "cand" / "summary.md").read_text()
    html = (tmp_path / "cand" / "report.html").read_text()
    for text in verdicts:
        assert f"vs baseline: {text}" in terminal
        assert f"against the baseline: {text}" in md
        assert escape(f"against the baseline: {text}") in html
