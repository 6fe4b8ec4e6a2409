"""The recall benchmark keeps working: ``--quick`` runs it end to end on tiny stores (no timing assertions)."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # runs both benchmarks end to end at their quick sizes

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_recall.py"


def test_quick_run_prints_the_tables(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # the script adds bench/ to the path
    spec = importlib.util.spec_from_file_location("bench_recall", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--quick"]) == 0
    out = capsys.readouterr().out
    number = r"\s+-?\d+\.\d+"
    for contender in ("stat floor", "read floor", "naive upstream", "recall DocCache", "recall cold", "recall warm"):
        assert re.search(rf"^{contender}({number}){{6}}$", out, re.MULTILINE), contender
    assert re.search(r"warm recall / stat floor \d+\.\d+", out)
    for step in ("warm recall", "dedupe planning", "index rebuild", "patch application"):
        assert re.search(rf"^{step} \(\w+\)\s+[\d,]+ -> [\d,]+\s+[\d.]+ -> [\d.]+{number}", out, re.MULTILINE), step


def test_telemetry_bench_quick_run_prints_the_ratio(capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.spec_from_file_location("bench_telemetry", BENCH.parent / "bench_telemetry.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.delenv("MEMORY_CORE_FSYNC")  # unset, as outside the test suite: the bench must leave it unset
    before = {name: os.environ.get(name) for name in ("TMPDIR", "MEMORY_CORE_FSYNC")}
    tempdir = tempfile.tempdir
    assert module.main(["--quick"]) == 0
    # the bench sets them for its own run and gives them back: this worker's later tests (the store's fsync
    # interruption test among them) must not run with fsync off
    assert {name: os.environ.get(name) for name in before} == before
    assert tempfile.tempdir == tempdir
    out = capsys.readouterr().out
    for contender in ("sdk disabled", "spans kept", "export on"):
        assert re.search(rf"^{contender}\s+\d+\.\d\s+\d+\.\d\s+\d+\s+\d+\.\d{{3}} \(", out, re.MULTILINE), out
    assert re.search(r"telemetry overhead with export on: [+-]\d+\.\d% of a replay", out)
