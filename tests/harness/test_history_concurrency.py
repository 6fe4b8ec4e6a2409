"""Runs that append to one history database at once (2-4 processes, generated run ids and counts) lose no row,
duplicate none and never print "database is locked" (or any warning): ``append_run`` writes under
``BEGIN IMMEDIATE`` with a busy timeout and retries, and readers that race the writers still see whole runs."""

from __future__ import annotations

import multiprocessing
import sqlite3
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.evaluation import evaluate_run
from harness.replay import Probe, ScenarioResult
from harness.reporting import _history as history
from harness.reporting import append_run, read_history
from harness.reporting._history import TREND_METRICS
from tests.helpers import examples

STRATEGIES = ("heuristic", "bm25")


def _summary(run_id: str, f1: float):  # type: ignore[no-untyped-def]
    results = [ScenarioResult("s", strategy, True, (), (Probe("s", 0, "recall", strategy, metrics={"f1": f1}),), "t")
               for strategy in STRATEGIES]
    return evaluate_run(results, list(STRATEGIES), run_id=run_id)


def _writer(db: str, worker: int, runs: int, readers: bool, problems: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    """Append ``runs`` runs (and read the history between them when ``readers``); report every warning."""
    def warn(path: Path, exc: BaseException) -> None:
        problems.put(f"{worker}: {type(exc).__name__}: {exc}")

    for n in range(runs):
        if not append_run(Path(db), _summary(f"w{worker}-r{n}", n / max(runs, 1)), warn=warn):
            problems.put(f"{worker}: run {n} not appended")
        if readers:
            for run in read_history(Path(db), limit=5, warn=warn):
                if len(run.metrics) != len(STRATEGIES):
                    problems.put(f"{worker}: read a partial run {run.run_id}")


@pytest.mark.slow  # racing processes (tests/_tiers.py)
@settings(max_examples=examples(12), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.integers(2, 4), st.lists(st.integers(1, 25), min_size=4, max_size=4), st.booleans(), st.booleans())
def test_concurrent_runs_lose_no_history_row(processes: int, counts: list[int], readers: bool, fresh: bool) -> None:
    ctx = multiprocessing.get_context("fork")
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "reports" / "history.sqlite"
        if not fresh:  # an existing history (schema made) or none at all (every process races to create it)
            assert append_run(db, _summary("seed", 0.5))
        problems = ctx.Queue()
        workers = [ctx.Process(target=_writer, args=(str(db), w, counts[w], readers, problems))
                   for w in range(processes)]
        for p in workers:
            p.start()
        for p in workers:
            p.join(120)
        assert [p.exitcode for p in workers] == [0] * processes
        seen = []
        while not problems.empty():
            seen.append(problems.get())
        assert seen == []
        want = {f"w{w}-r{n}" for w in range(processes) for n in range(counts[w])} | (set() if fresh else {"seed"})
        with sqlite3.connect(db) as conn:
            runs = [row[0] for row in conn.execute("SELECT run_id FROM runs")]
            metrics = conn.execute("SELECT run_id, count(*) FROM metrics GROUP BY run_id").fetchall()
        assert sorted(runs) == sorted(want)
        assert dict(metrics) == dict.fromkeys(want, len(STRATEGIES) * len(TREND_METRICS))
        assert {r.run_id for r in read_history(db, limit=1000)} == want


def _hold(db: Path, mode: str, seconds: float):  # type: ignore[no-untyped-def]
    """A process that holds the database (``BEGIN EXCLUSIVE``: a long write; ``BEGIN`` + a read: a slow reader)
    for ``seconds``, started and holding when this returns."""
    ctx = multiprocessing.get_context("fork")
    ready = ctx.Event()

    def hold() -> None:
        conn = sqlite3.connect(db, isolation_level=None)
        conn.execute(mode)
        conn.execute("SELECT count(*) FROM runs").fetchone()
        ready.set()
        time.sleep(seconds)
        conn.execute("COMMIT")

    process = ctx.Process(target=hold)
    process.start()
    assert ready.wait(30)
    return process


@pytest.mark.parametrize("mode", ["BEGIN EXCLUSIVE", "BEGIN"])
def test_a_lock_held_past_the_busy_timeout_is_waited_for_not_reported(
        tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Another process holding the database for longer than one busy timeout (a long write, a slow reader) delays
    the append and the read; it does not cost the row or print a warning."""
    monkeypatch.setattr(history, "BUSY_TIMEOUT_S", 0.1)
    db = tmp_path / "history.sqlite"
    assert append_run(db, _summary("first", 0.1))
    holder = _hold(db, mode, 1.0)
    try:
        assert append_run(db, _summary("second", 0.2))
        assert {r.run_id for r in read_history(db)} == {"first", "second"}
    finally:
        holder.join(30)
    assert "warning" not in capsys.readouterr().err


def test_a_lock_held_past_the_wait_is_one_plain_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(history, "BUSY_TIMEOUT_S", 0.05)
    monkeypatch.setattr(history, "HISTORY_WAIT_S", 0.3)
    db = tmp_path / "history.sqlite"
    assert append_run(db, _summary("first", 0.1))
    holder = _hold(db, "BEGIN EXCLUSIVE", 2.0)
    try:
        start = time.monotonic()
        assert not append_run(db, _summary("second", 0.2))
        assert time.monotonic() - start < 1.5
    finally:
        holder.join(30)
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"memharness: warning: run history {db} not updated"), line
    assert "held the history for over 0.3 s" in line
    assert "database is locked" not in line
