"""Baseline regression is a first-class path: flips and significant drops fail the run; partial runs say so."""

from __future__ import annotations

import importlib
import json
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.replay import resolve_set
from tests.harness.conftest import SCENARIOS

RECALL = str(SCENARIOS / "recall")


@pytest.fixture(scope="module")
def gates(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The shipped gates file's baseline gates (the recall subset has no dedupe or forget probes to floor)."""
    blocks = (SCENARIOS / "gates.toml").read_text().split("[[gate]]")
    path = tmp_path_factory.mktemp("gates") / "gates.toml"
    path.write_text("".join(f"[[gate]]{b}" for b in blocks[1:] if 'vs = "baseline"' in b))
    return str(path)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory, gates: str) -> Path:
    out = tmp_path_factory.mktemp("base")
    assert main(["run", RECALL, "--strategy", "heuristic", "--out", str(out), "--gates", gates], environ={}) == 0
    return out


def test_an_unchanged_candidate_passes_with_no_detectable_change(base: Path, gates: str, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", RECALL, "--strategy", "heuristic", "--out", str(tmp_path), "--gates", gates,
                 "--baseline", str(base)], environ={}) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["baseline"]["flips"] == []
    # the recall directory's portable scenarios replay against both shipped systems: one verdict per column
    verdicts = {v["strategy"]: v["verdict"] for v in summary["baseline"]["verdicts"]}
    assert verdicts == {"heuristic": "no detectable change", "heuristic@sqlite": "no detectable change"}
    assert "vs baseline: heuristic: no detectable change" in capsys.readouterr().out


def test_a_significant_recall_drop_fails_naming_metric_ci_and_flips(base: Path, gates: str, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    recall_mod = importlib.import_module("memory_core.files.recall")
    original = recall_mod.select_heuristic
    # a regression in the core: recall keeps only its best memory (the limit silently becomes 1)
    monkeypatch.setattr(recall_mod, "select_heuristic", lambda q, docs, limit=5: original(q, docs, limit=1))
    code = main(["run", RECALL, "--strategy", "heuristic", "--out", str(tmp_path), "--gates", gates,
                 "--baseline", str(base)], environ={})
    out = capsys.readouterr().out
    assert code == 1
    summary = json.loads((tmp_path / "summary.json").read_text())
    verdict, sqlite = summary["baseline"]["verdicts"]
    assert sqlite["strategy"] == "heuristic@sqlite"  # the fault is in the file core: the SQLite column is unchanged
    assert sqlite["verdict"] == "no detectable change"
    assert verdict["verdict"] == "worse"
    assert "recall.recall" in verdict["text"]
    assert "95% CI" in verdict["text"]
    failed = {g["name"] for g in summary["gates"] if not g["passed"]}
    assert "heuristic recall.recall drop vs baseline <= 0.0" in failed
    assert "no check flips from pass to fail vs baseline" in failed
    flips = summary["baseline"]["flips"]
    assert {f["scenario"] for f in flips} >= {"multi-fact"}
    assert "GATE FAILED: heuristic recall.recall drop vs baseline" in out
    # compare reads the same two runs, gives the same verdict, ranks the most harmful probe first, exits 1
    code = main(["compare", str(base), str(tmp_path), "--gates", gates], environ={})
    out = capsys.readouterr().out
    assert code == 1
    assert out.splitlines()[0].startswith("heuristic: worse")
    changed = [line for line in out.splitlines() if line.startswith("  recall/")]
    harms = [float(line.split("F1 ")[1].split(" -> ")[0]) - float(line.split(" -> ")[1].split(";")[0])
             for line in changed]
    assert harms == sorted(harms, reverse=True)


def test_a_partial_run_is_incomplete_and_refuses_a_baseline(base: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    cassettes = tmp_path / "cassettes"
    shutil.copytree(resolve_set(SCENARIOS / "cassettes"), cassettes)  # the default set of the shipped shelf
    lines = (cassettes / "cassette.jsonl").read_text().splitlines()
    (cassettes / "cassette.jsonl").write_text("\n".join(lines[: len(lines) // 2]) + "\n")  # a prompt edit, unrecorded
    out = tmp_path / "run"
    assert main(["run", RECALL, "--strategy", "heuristic,model", "--cassettes", str(cassettes), "--out", str(out)],
                environ={}) == 2
    printed = capsys.readouterr().out
    assert "INCOMPLETE:" in printed
    assert "PARTIAL SUITE" in printed
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] is False
    assert summary["incomplete"]
    assert (out / "summary.md").read_text().startswith("## memharness — INCOMPLETE")
    assert "INCOMPLETE" in (out / "report.html").read_text()
    # against a complete baseline: refused, exit 2, with the reason in one line
    code = main(["run", RECALL, "--strategy", "heuristic,model", "--cassettes", str(cassettes), "--out",
                 str(tmp_path / "again"), "--baseline", str(base)], environ={})
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("memharness:")]
    assert code == 2
    assert len(err) == 1
    assert "candidate run is incomplete" in err[0]
    assert main(["compare", str(base), str(out)], environ={}) == 2
