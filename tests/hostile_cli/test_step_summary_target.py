"""``$GITHUB_STEP_SUMMARY`` naming something other than a plain file (hostile probe, round 11: environment variables).

Before: a FIFO no process reads blocked the end of ``memharness run`` for ever (``open(…, "a")`` waits for a reader;
the run had replayed and written everything, then hung). Now the summary is appended as a shell's ``>>`` would, and
a FIFO no one reads within ``FIFO_READER_WAIT_S`` is the one-line warning every other write error of the summary
is; the run's verdict is unchanged. Generated: what the variable names (a FIFO with or without a reader, a file, a
missing file, a directory, a path below a file, ``/dev/null``) and whether ``GITHUB_ACTIONS`` is set.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.harness.conftest import SCENARIOS
from tests.helpers import examples
from tests.hostile_cli.test_write_targets import _drain

WALL_S = 60
"""In a child process: a run that blocks (the old code, in ``open()`` of the FIFO) is killed, not waited for."""



@pytest.mark.slow  # ten child runs, ~14 s
@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["fifo", "fifo-read", "file", "missing", "directory", "below-file", "dev-null"]),
       actions=st.booleans())
def test_the_step_summary_target_never_blocks_the_run(tmp_path_factory: pytest.TempPathFactory, kind: str,
                                                       actions: bool) -> None:
    root = tmp_path_factory.mktemp("summary")
    target = {"below-file": root / "afile" / "summary.md", "dev-null": Path("/dev/null")}.get(kind, root / "summary.md")
    got: list[bytes] = []
    reader = None
    if kind.startswith("fifo"):
        os.mkfifo(target)
        reader = _drain(target, got) if kind == "fifo-read" else None
    elif kind == "file":
        target.write_text("earlier step\n", encoding="utf-8")
    elif kind == "directory":
        target.mkdir()
    elif kind == "below-file":
        (root / "afile").write_text("x", encoding="utf-8")
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(target), "GITHUB_ACTIONS": "true" if actions else "false",
           "MEMHARNESS_HISTORY": str(root / "history.sqlite")}
    try:
        done = subprocess.run([sys.executable, "-m", "harness", "run", str(SCENARIOS / "recall" / "abstain-unrelated.yaml"),
                               "--strategy", "heuristic", "--no-gates", "--out", str(root / "out")],
                              env=env, capture_output=True, text=True, timeout=WALL_S, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"memharness run did not return within {WALL_S} s (GITHUB_STEP_SUMMARY: {kind})")
    assert done.returncode == 0, done.stderr
    assert (root / "out" / "summary.json").exists()
    warnings = [line for line in done.stderr.splitlines() if "GITHUB_STEP_SUMMARY" in line]
    if kind in ("fifo", "directory", "below-file"):
        assert len(warnings) == 1, done.stderr
        assert warnings[0].startswith("memharness: warning: cannot append to GITHUB_STEP_SUMMARY"), done.stderr
    else:
        assert not warnings, done.stderr
    if kind == "file":
        text = target.read_text(encoding="utf-8")
        assert text.startswith("earlier step\n")
        assert "report.html" in text
    if reader is not None:
        reader.join(WALL_S)
        assert b"report.html" in b"".join(got)
