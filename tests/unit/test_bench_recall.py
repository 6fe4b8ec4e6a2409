"""The recall benchmark keeps working: ``--quick`` runs it end to end on tiny stores (no timing assertions)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

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
