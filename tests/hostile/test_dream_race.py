"""Concurrent dreams (issue 23): 8 processes force a dream each round with 0-2 ms staggered arrivals; never two
dreams inside the lock, and every store mutation happens inside its own process's lock window."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from pathlib import Path

from memory_core.clock import SystemClock
from memory_core.state import scaffold
from memory_core.store import LOCK_KEY, FileStore
from tests.helpers import put_doc

PROCESSES = 8
ROUNDS = int(os.environ.get("MEMHARNESS_RACE_ROUNDS", "20"))
INTERVAL_S = 0.05
CHILD = Path(__file__).with_name("dream_child.py")


def _windows(lines: list[list[str]]) -> tuple[list[tuple[int, int, str]], list[tuple[int, str, str]]]:
    windows, muts, open_at = [], [], {}
    for pid, kind, ns, detail in lines:
        if kind == "enter":
            assert pid not in open_at
            open_at[pid] = int(ns)
        elif kind == "exit":
            windows.append((open_at.pop(pid), int(ns), pid))
        elif kind == "mut":
            muts.append((int(ns), pid, detail))
    assert not open_at, f"windows never closed: {open_at}"
    return sorted(windows), muts


def test_eight_racing_processes_never_dream_together(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    store = FileStore(root, SystemClock())
    scaffold(store, now=SystemClock().now())
    put_doc(store, "user/a.md", "user", "b fact\n\na fact\n\nb fact")
    log = tmp_path / "log"
    env = {**os.environ, "MEMORY_CORE_FSYNC": "0", "PYTHONPATH": str(Path(__file__).parents[2])}
    procs = [subprocess.Popen([sys.executable, str(CHILD), str(root), str(log), str(ROUNDS), str(INTERVAL_S), str(i)],
                              env=env, stderr=subprocess.PIPE) for i in range(PROCESSES)]
    try:
        deadline = time.monotonic() + 60
        while (log.read_text().count(" ready ") if log.exists() else 0) < PROCESSES:
            assert time.monotonic() < deadline, "children did not start"
            assert all(p.poll() is None for p in procs), [p.stderr.read() for p in procs if p.stderr]
            time.sleep(0.01)
        (tmp_path / "go.tmp").write_text(str(time.time() + 0.05))
        (tmp_path / "go.tmp").replace(tmp_path / "go")  # atomically: a child never reads it half-written
        errors = [p.communicate(timeout=60)[1] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert [p.returncode for p in procs] == [0] * PROCESSES, errors
    lines = [ln.split(" ") for ln in log.read_text().splitlines()]
    windows, muts = _windows(lines)
    for (_, end, pid), (start, _, other) in itertools.pairwise(windows):
        assert start > end, f"two dreams inside the lock at once: {pid} and {other}"
    outcomes = [ln[3].split(":") for ln in lines if ln[1] == "outcome"]
    assert len(outcomes) == PROCESSES * ROUNDS
    assert {(o[1], o[2]) for o in outcomes} <= {("noop", "None"), ("updated", "None"), ("skipped", "locked")}
    dreams = sum(o[1] != "skipped" for o in outcomes)
    assert dreams == len(windows) >= ROUNDS
    for ns, pid, key in muts:
        if key == "../consolidation.lock":
            continue  # the lock file itself is written on the way in and removed on the way out
        assert any(s <= ns <= e and p == pid for s, e, p in windows), f"{pid} changed {key} outside its lock"
    assert not (root.parent / "consolidation.lock").exists()
    assert LOCK_KEY == "../consolidation.lock"
