"""The default run over every shipped system: labels, gates, trace ids, baselines and stray system names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from tests.harness.conftest import SCENARIOS

PORTABLE = str(SCENARIOS / "dream" / "portable-duplicate-records.yaml")
SQLITE_ONLY = str(SCENARIOS / "sqlite" / "ttl-2h.yaml")


def _results(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_a_selection_without_reference_scenarios_keeps_the_sqlite_labels(tmp_path: Path) -> None:
    assert main(["run", SQLITE_ONLY, "--out", str(tmp_path / "o")], environ={}) == 0
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert set(summary["strategies"]) == {"heuristic@sqlite", "bm25@sqlite"}  # never the reference's bare labels
    assert summary["meta"]["system"] == "reference"
    assert summary["meta"]["systems"] == ["sqlite"]


def test_the_two_systems_replays_of_one_scenario_never_share_trace_ids(tmp_path: Path) -> None:
    assert main(["run", PORTABLE, "--out", str(tmp_path / "o")], environ={"MEMHARNESS_RUN_ID": "fixed"}) == 0
    traces = {r["strategy"]: r["trace_id"] for r in _results(tmp_path / "o")}
    assert set(traces) == {"heuristic", "heuristic@sqlite"}
    assert traces["heuristic"] != traces["heuristic@sqlite"]
    # the reference's ids are what a reference-only run gives (baselines and links keep working)
    assert main(["run", PORTABLE, "--system", "reference", "--out", str(tmp_path / "r")],
                environ={"MEMHARNESS_RUN_ID": "fixed"}) == 0
    assert _results(tmp_path / "r")[0]["trace_id"] == traces["heuristic"]


def test_a_strategy_gate_with_nothing_to_pair_on_the_second_system_is_skipped(tmp_path: Path) -> None:
    gates = tmp_path / "g.toml"
    gates.write_text('[[gate]]\nmetric = "recall.f1"\nstrategy = "model"\nvs = "heuristic"\nmax_drop = 0.5\n')
    paths = [str(SCENARIOS / "recall" / "type-user.yaml"), str(SCENARIOS / "sqlite" / "read-decompose-model.yaml")]
    assert main(["run", *paths, "--strategy", "heuristic,model", "--cassettes", str(SCENARIOS / "cassettes"),
                 "--gates", str(gates), "--out", str(tmp_path / "o")], environ={}) == 0
    rows = {g["strategy"]: g for g in json.loads((tmp_path / "o" / "summary.json").read_text())["gates"]}
    assert rows["model"]["passed"]
    assert not rows["model"]["skipped"]
    assert rows["model@sqlite"]["skipped"]
    assert "share no probe" in rows["model@sqlite"]["detail"]


def test_baselines_of_another_first_system_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", PORTABLE, "--out", str(tmp_path / "base")], environ={}) == 0
    code = main(["run", PORTABLE, "--system", "sqlite", "--baseline", str(tmp_path / "base"),
                 "--out", str(tmp_path / "cand")], environ={})
    assert code == 2
    assert "the baseline's columns are system reference, the candidate's sqlite" in capsys.readouterr().err
    assert main(["compare", str(tmp_path / "base"), str(tmp_path / "base")], environ={}) == 0


def test_a_misspelt_system_is_reported_skipped_not_dropped(tmp_path: Path) -> None:
    text = Path(PORTABLE).read_text().replace("strategies:", "systems: [sqllite]\nstrategies:", 1)
    path = tmp_path / "typo.yaml"
    path.write_text(text)
    assert main(["run", str(path), PORTABLE, "--no-gates", "--out", str(tmp_path / "o")], environ={}) == 0
    typo = [r for r in _results(tmp_path / "o") if r["scenario"] == "typo"]
    assert len(typo) == 1
    assert "written for system(s) sqllite" in str(typo[0]["skipped"])
