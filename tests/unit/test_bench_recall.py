"""The recall benchmark keeps working: ``--quick`` runs it end to end on tiny stores (no timing assertions)."""

from __future__ import annotations

import importlib.util
import math
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
    for contender in ("stat floor", "read floor", "naive upstream", "recall DocCache", "recall cold", "recall warm",
                      "warm via wrapper"):
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


def test_targets_bench_quick_run_measures_every_target(tmp_path: Path) -> None:
    """``bench_targets.py`` runs every benchmark and the default run, and prints (and keeps) each issue-34 target
    with a measured number and its load average."""
    import json
    import subprocess

    out = tmp_path / "targets.json"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("MEMORY_CORE_FSYNC", None)
    done = subprocess.run([sys.executable, str(BENCH.parent / "bench_targets.py"), "--quick", "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=900, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = json.loads(out.read_text(encoding="utf-8"))["targets"]
    names = [row["name"] for row in rows]
    for prefix in ("--help vs bare", "cold recall vs upstream", "warm recall via wrapper", "telemetry on",
                   "suite scaling: replay time", "suite scaling: peak memory", "--jobs 2 vs --jobs 1", "conversation",
                   "harness / system time, heuristic"):
        assert any(name.startswith(prefix) for name in names), (prefix, names)
    for row in rows:
        assert isinstance(row["value"], float), row
        assert math.isfinite(row["value"]), row
        assert isinstance(row["load"], float), row
        assert row["better"] in ("lower", "higher"), row
        assert re.search(rf"^{re.escape(row['name'])}\s+\d+\.\d{{3}}\s+(<=|>=)\s*\d+\.\d\d  (met|MISSED)\s",
                         done.stdout, re.MULTILINE), row["name"]
