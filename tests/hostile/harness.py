"""Builders for the hostile-input suite: a seeded on-disk store, every operation run once, a time bound."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from memory_core.clock import FixedClock
from memory_core.events import ListSink
from memory_core.files.dream import DreamScheduler, run_dream
from memory_core.files.extract import ExtractRequest, ExtractScheduler, run_extract
from memory_core.files.forget import forget
from memory_core.files.history import ChatMessage
from memory_core.files.index import rebuild_index
from memory_core.files.recall import recall
from memory_core.files.scan import scan
from memory_core.files.sessions import InMemorySessions
from memory_core.files.store import FileStore, Store
from memory_core.model import Model
from tests.conftest import T0
from tests.helpers import put_doc

LIMIT_S = 2.0
HANG_S = 30.0
T = TypeVar("T")


class Hang(BaseException):
    """Raised by the alarm in ``within``; a BaseException, so no ``except Exception`` under test can swallow it."""


def _alarm(_signum: int, _frame: object) -> None:
    raise Hang(f"no answer after {HANG_S:.0f} s of wall time (blocked)")


def within(fn: Callable[[], T], *, limit_s: float = LIMIT_S) -> T:
    """Run ``fn``; assert it used under ``limit_s`` of CPU (issue 14: each hostile input within 2 s) and never
    blocks (an alarm fires after ``HANG_S`` s of wall time). CPU, not wall, time is bounded because the machines
    running CI are shared: a neighbour's load must not fail the test, and a hang uses no CPU but trips the alarm."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, HANG_S)
    t0 = time.process_time()
    try:
        result = fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    elapsed = time.process_time() - t0
    assert elapsed < limit_s, f"took {elapsed:.2f} s of CPU"
    return result


def seeded_store(tmp_path: Path) -> FileStore:
    """An on-disk store with two ordinary docs (and a duplicate entry for dream to fold)."""
    store = FileStore(tmp_path / "proj" / "memory", FixedClock(T0))
    put_doc(store, "user/terse.md", "user", "Prefers terse answers\n\nWhy: reads diffs", description="terse")
    put_doc(store, "project/freeze.md", "project", "Release freeze Friday\n\nrelease freeze friday",
            description="freeze")
    rebuild_index(store)
    return store


@dataclass
class Results:
    """What each public operation returned on one store."""

    extract: Any
    dream: Any
    forget: Any
    recall: Any
    sink: ListSink


def run_all(store: Store, *, model: Model | None = None, query: str = "terse answers") -> Results:
    """Run extract (scheduler), dream (scheduler, forced), recall and forget once each, each within 2 s."""
    sink = ListSink()
    request = ExtractRequest("s1", (ChatMessage("user", "Remember that I always use tabs for indentation"),))
    root = str(getattr(store, "root", "/p/.qwen/memory"))
    ex = within(lambda: ExtractScheduler(store, root, model=model, events=sink).schedule(request, now=T0))
    dr = within(lambda: DreamScheduler(store, InMemorySessions(), model=model, events=sink)
                .schedule(now=T0, session_id="s1", force=True))
    rc = within(lambda: recall(store, query, now=T0, model=model, events=sink))
    fg = within(lambda: forget(store, "zzz-no-such-entry", now=T0, model=model, events=sink))
    return Results(ex, dr, fg, rc, sink)


def run_direct(store: FileStore) -> None:
    """The direct entry points (no scheduler): each returns, none raises, each within 2 s."""
    request = ExtractRequest("s2", (ChatMessage("user", "Remember that the staging dashboard is grafana"),))
    within(lambda: run_extract(store, request, now=T0, root=str(store.root)))
    within(lambda: run_dream(store, now=T0))
    within(lambda: scan(store))
    within(lambda: rebuild_index(store))


def race_children(count: int, child: Callable[[int], int], log: Path, ready: str, go: Callable[[], None],
                  start_within_s: float = 30.0) -> list[int]:
    """Fork ``count`` children running ``child(i)`` (its return value is the exit code), wait until ``log`` holds
    ``ready`` once per child, call ``go()`` to release them all at once, and return their exit codes. A child that
    never started, or an assertion here, leaves no process behind (each is killed and reaped)."""
    import os

    pids = []
    for i in range(count):  # forked: every child starts with the modules loaded, in milliseconds
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child never returns to pytest
            code = 1
            try:
                code = child(i)
            finally:
                os._exit(code)
        pids.append(pid)
    try:
        deadline = time.monotonic() + start_within_s
        while (log.read_text().count(ready) if log.exists() else 0) < count:
            assert time.monotonic() < deadline, "children did not start"
            time.sleep(0.005)
        go()
        codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]
        pids = []
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    return codes
