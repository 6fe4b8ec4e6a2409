"""A gate in ``summary.json`` is read back only when its ``value``, ``skipped`` and ``passed`` are what its bounds
give on the run's own rows (round 17: the gate's bounds were not written, so a failed gate edited to pass — with
the run's ``passed`` — was read, reported and posted as passing). Generated: which gate, which field, what value;
the unedited run and gates written without bounds (runs before round 17) are read as before."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.harness.conftest import SCENARIOS
from tests.hostile_cli._support import cli

GATES = """
[[gate]]
metric = "recall.f1"
min = 0.5
[[gate]]
metric = "recall.precision"
max = 0.99
[[gate]]
metric = "latency.recall_ms.p95"
max = 100000
[[gate]]
metric = "scenarios.failed"
max = 0
[[gate]]
metric = "recall.abstention_accuracy"
min = 0.1
[[gate]]
metric = "recall.f1"
strategy = "model"
vs = "heuristic"
max_drop = 0.0
"""


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from harness.cli import main

    root = tmp_path_factory.mktemp("gates")
    (root / "gates.toml").write_text(GATES, encoding="utf-8")
    out = root / "base"
    main(["run", *(str(SCENARIOS / "recall" / f"models-0{i}-{n}.yaml") for i, n in
                   ((1, "payments"), (2, "mobile-app"), (3, "data-pipeline"))),
          "--gates", str(root / "gates.toml"), "--out", str(out)], environ={})
    gates = json.loads((out / "summary.json").read_text(encoding="utf-8"))["gates"]
    assert any(g["passed"] and not g["skipped"] for g in gates)
    assert any("max_drop" in g and not g["skipped"] for g in gates)
    return out


def _edited(base: Path, where: Path, edit: Any) -> Path:
    shutil.copytree(base, where)
    summary = json.loads((where / "summary.json").read_text(encoding="utf-8"))
    edit(summary)
    summary["passed"] = all(g["passed"] for g in summary["gates"]) and not summary["incomplete"]  # consistent
    (where / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return where


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(pick=st.integers(0, 10_000), field=st.sampled_from(["passed", "value", "skipped"]),
       shift=st.floats(0.01, 1e6) | st.floats(-1e6, -0.01))
def test_a_gate_edited_since_the_run_is_one_located_line(base: Path, pick: int, field: str, shift: float,
                                                          tmp_path_factory: pytest.TempPathFactory,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    gates = json.loads((base / "summary.json").read_text(encoding="utf-8"))["gates"]
    checked = [i for i, g in enumerate(gates) if not g["skipped"] and g.get("vs") != "baseline"
               and (field != "value" or g["value"] is not None)]
    i = checked[pick % len(checked)]

    def edit(summary: dict[str, Any]) -> None:
        gate = summary["gates"][i]
        if field == "passed":
            gate["passed"] = not gate["passed"]
        elif field == "skipped":
            gate["skipped"], gate["passed"] = True, True
        else:
            gate["value"] = gate["value"] + shift
    cand = _edited(base, tmp_path_factory.mktemp("cand") / "run", edit)
    o = cli(["report", str(cand)], capsys)
    assert o.code == 2, (o.out, o.err)
    (line,) = o.err.splitlines()
    assert "summary.json:" in line, line
    assert f"gates[{i}]." in line, line
    assert gates[i]["name"] in line, line


@settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(old=st.sets(st.integers(0, 200), min_size=1))
def test_the_run_as_written_and_gates_without_bounds_are_read(base: Path, old: set[int],
                                                              tmp_path_factory: pytest.TempPathFactory,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A gate written before round 17 has no bounds: nothing tells its ``passed`` (flipped here) from the rows."""
    assert cli(["report", str(base)], capsys).code == 0

    def edit(summary: dict[str, Any]) -> None:
        for n, gate in enumerate(summary["gates"]):
            if n % len(summary["gates"]) in {k % len(summary["gates"]) for k in old}:
                for key in ("min", "max", "max_drop", "vs", "system"):
                    gate.pop(key, None)
                gate["passed"] = not gate["passed"]
    cand = _edited(base, tmp_path_factory.mktemp("old") / "run", edit)
    o = cli(["report", str(cand)], capsys)
    assert o.code == 0, (o.out, o.err)
