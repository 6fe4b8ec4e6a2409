"""Eight processes on one SQLite memory database at once (issue 33): each opens its own ``SqliteMemory`` (its own
connection: WAL, 5 s busy timeout) and, round after round, records a session of its own distinct facts and extracts
it (heuristic), recalls one of them, and dreams. Arrivals are released together from a start file.

Every operation returns normally: no "database is locked" (nor any other ``SqliteMemoryError``, the port's
documented failure) escapes while the others write, and each recall finds the fact its process just extracted.
Afterwards the database passes ``PRAGMA integrity_check`` and FTS5's ``integrity-check`` and every process's facts
are present: none lost.

Duplicates may appear for a while (spec §7 Q23: one process's dream extracts the turns another process has just
recorded but not yet marked extracted, so both store the fact); the test counts them and asserts that one final
dream leaves each fact stored exactly once.

``MEMHARNESS_SQLITE_RACE_ROUNDS`` sets the rounds per process (default 8).
"""

from __future__ import annotations

import json
import os
import re
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memory_core.clock import FixedClock
from memory_core.model import ModelReply, ModelRequest
from memory_core.sqlite import Quirks, SqliteMemory
from memory_core.sqlite.extraction import EXTRACT_PURPOSE
from memory_core.sqlite.lifecycle import deduplicate
from tests.hostile.harness import race_children
from tests.sqlite.conftest import T0, scratch

PROCESSES = 8
ROUNDS = int(os.environ.get("MEMHARNESS_SQLITE_RACE_ROUNDS", "8"))
TURNS = 2
OPEN_TRIALS = 10


def _fact(tag: str) -> str:
    """A heuristic-extractable preference whose words are its own (two facts overlap below dedupe's 0.7)."""
    return f"i prefer qz{tag}a qz{tag}b qz{tag}c qz{tag}d tooling"


def test_two_dedupes_from_different_snapshots_keep_one_copy() -> None:
    """Regression for the loss the race test found (spec §7 Q23: dedupe reads a snapshot, then deletes by id): two
    copies of a fact; one process's dedupe keeps X (accessed since) and deletes Y, another's, working from a snapshot
    in which Y had the accesses, keeps Y and deletes X. Both copies were deleted; now the second delete finds its
    keeper gone and leaves X."""
    with scratch() as tmp:
        first, second = _open(tmp / "m.db"), _open(tmp / "m.db")
        try:
            x, y = first.seed([{"content": _fact("same"), "type": "preference", "importance": 0.7},
                               {"content": _fact("same"), "type": "preference", "importance": 0.7}])
            stale = second.db.load_all()
            for row in stale:
                row["access_count"] = 5 if row["id"] == y else 0
            first.db.update_memory(x, {"access_count": 1})
            assert deduplicate(first.db) == 1  # keeps x
            second.db.load_all = lambda: stale  # type: ignore[method-assign]
            assert deduplicate(second.db) == 0  # would keep y (already gone): x stays
            assert [r["id"] for r in first.db.load_all()] == [x]
            assert first.fts_integrity() is None
        finally:
            first.close()
            second.close()


def _tags() -> list[str]:
    return [f"p{p}r{r}t{t}" for p in range(PROCESSES) for r in range(ROUNDS) for t in range(TURNS)]


def _open(path: Path) -> SqliteMemory:
    return SqliteMemory(path, FixedClock(T0), identity_dir=path.parent / "identity")


def _racer(path: Path, log: Path, index: int, *, fresh: bool) -> int:
    """Open (``fresh``: after the start, all at once, on a database no one has created yet), then extract / recall /
    dream each round; log each outcome on one line."""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def note(kind: str, detail: str) -> None:
        os.write(fd, f"{index}\t{kind}\t{' '.join(detail.split())[:1500]}\n".encode())

    def wait() -> None:
        note("ready", "-")
        go = log.with_name("go")
        while not go.exists():
            time.sleep(0.001)

    if fresh:
        wait()
    try:
        mem = _open(path)
    except Exception as exc:  # logged for the parent's assertion
        note("error", f"open: {type(exc).__name__}: {exc}")
        return 1
    if not fresh:
        wait()
    for r in range(ROUNDS):
        session, tags = f"p{index}r{r}", [f"p{index}r{r}t{t}" for t in range(TURNS)]
        for name, op in (
            ("extract", lambda session=session, tags=tags: mem.extract(session, strategy="heuristic")
             if mem.add_turns(session, [{"role": "user", "content": _fact(t)} for t in tags]) else None),
            ("recall", lambda tags=tags: mem.recall(f"qz{tags[0]}a qz{tags[0]}b")),
            ("dream", lambda: mem.dream(force=True, strategy="heuristic")),
        ):
            t0 = time.perf_counter()
            try:
                out = op()
            except Exception as exc:  # every escape is logged and fails the test
                note("error", f"{name} round {r} after {time.perf_counter() - t0:.3f} s: {type(exc).__name__}: {exc} "
                              f"{traceback.format_exc(limit=-4)}")
                continue
            if name == "recall" and not any(f"qz{tags[0]}a" in c.content.lower() for c in out.items):
                note("miss", f"recall round {r} did not find {tags[0]}")
            elif name == "dream" and out.status == "failed":
                note("error", f"dream round {r}: {out.reason}")
            else:
                note("ok", f"{name} {r} {getattr(out, 'status', '')}")
    mem.close()
    return 0


def _opener(path: Path, go: Path, index: int) -> int:
    """Open at the start signal and store one memory; exit code 3 (and the message in a file) if anything escapes."""
    while not go.exists():
        time.sleep(0.0005)
    try:
        mem = _open(path)
        mem.seed([{"content": _fact(f"open{index}"), "type": "preference", "importance": 0.7}])
        mem.close()
    except Exception as exc:  # the parent asserts on the exit code and reads it
        go.with_name(f"error{index}").write_text(f"{type(exc).__name__}: {exc}")
        return 3
    return 0


def _all_at_once(child: Callable[[Path, Path, int], int], path: Path, go: Path) -> tuple[list[int], list[str]]:
    """Fork ``PROCESSES`` children running ``child(path, go, index)``, release them together through ``go``; their
    exit codes, and the errors they wrote beside ``go``."""
    pids = []
    for i in range(PROCESSES):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child never returns to pytest
            code = 1
            try:
                code = child(path, go, i)
            finally:
                os._exit(code)
        pids.append(pid)
    go.write_text("go")
    codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]
    return codes, [p.read_text() for p in sorted(go.parent.glob("error*"))]


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_eight_processes_open_a_fresh_database_at_once() -> None:
    """Regression: each open creates the FTS index when it is missing; the check and the creation were separate
    autocommitted statements, so processes opening a new database together failed ("table memories_fts already
    exists", "trigger ... already exists"), rebuilt it under each other's writes (later writes then met "database is
    locked" at once) or left the FTS index malformed. About one trial in three failed; now every open works."""
    for trial in range(OPEN_TRIALS):
        with scratch() as tmp:
            path, go = tmp / "m.db", tmp / "go"
            codes, errors = _all_at_once(_opener, path, go)
            assert codes == [0] * PROCESSES, f"trial {trial}: an open failed: {codes} {errors}"
            mem = _open(path)
            try:
                assert mem.db.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
                assert mem.fts_integrity() is None, f"trial {trial}"
                assert len(mem.db.load_all()) == PROCESSES
                assert len(mem.recall("tooling", k=50).items) >= PROCESSES
            finally:
                mem.close()


MIXED_WRITES = 25


def _mixed_writer(path: Path, go: Path, index: int) -> int:
    """Open at the start signal in this process's tokenizer mode (odd: unicode61, even: trigram, so each open may
    rebuild the FTS table the others write through), then store ``MIXED_WRITES`` memories one write at a time."""
    while not go.exists():
        time.sleep(0.0005)
    try:
        mem = SqliteMemory(path, FixedClock(T0), quirks=Quirks.parse("fixed+q3_cjk_unsegmented" if index % 2 else "fixed"),
                           identity_dir=path.parent / "identity")
        for w in range(MIXED_WRITES):
            mem.add_memory(_fact(f"m{index}w{w}"), "preference", 0.7)
        mem.close()
    except Exception as exc:  # the parent asserts on the exit code and reads it
        go.with_name(f"error{index}").write_text(f"{type(exc).__name__}: {exc}")
        return 3
    return 0


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_processes_opening_one_database_in_both_tokenizer_modes_write_without_locked_errors() -> None:
    """Regression (issue 33 F13): a write outside ``atomic()`` began a deferred transaction, read, then asked for the
    write lock; when another process had committed in between (above all an open in the other tokenizer mode, which
    rebuilds the FTS table), SQLite answered "database is locked" at once, without waiting. 3 of 8 processes failed
    in mixed-mode races; every write transaction now begins immediate and waits."""
    for trial in range(4):
        with scratch() as tmp:
            path, go = tmp / "m.db", tmp / "go"
            _open(path).close()
            codes, errors = _all_at_once(_mixed_writer, path, go)
            assert codes == [0] * PROCESSES, f"trial {trial}: a write failed: {codes} {errors}"
            mem = _open(path)
            try:
                stored = {str(r["content"]) for r in mem.db.load_all()}
                assert stored == {_fact(f"m{i}w{w}") for i in range(PROCESSES) for w in range(MIXED_WRITES)}
                assert mem.fts_integrity() is None
            finally:
                mem.close()


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.parametrize("fresh", [False, True], ids=["existing-db", "fresh-db"])
def test_eight_processes_extract_recall_and_dream_on_one_database(fresh: bool) -> None:
    """``fresh``: the eight open a database file that does not exist yet, at once (each creates the schema and the
    FTS index if missing: "table memories_fts already exists" and a corrupt FTS index before the fix)."""
    with scratch() as tmp:
        path, log = tmp / "m.db", tmp / "log"
        if not fresh:
            _open(path).close()
        t_start = time.perf_counter()
        codes = race_children(PROCESSES, lambda i: _racer(path, log, i, fresh=fresh), log, "\tready\t",
                              lambda: (tmp / "go").write_text("go"), start_within_s=60)
        elapsed = time.perf_counter() - t_start
        lines = [ln.split("\t", 2) for ln in log.read_text().splitlines()]
        errors = [ln for ln in lines if ln[1] in ("error", "miss")]
        assert codes == [0] * PROCESSES, errors
        assert not errors, errors[:5]
        assert sum(ln[1] == "ok" for ln in lines) == PROCESSES * ROUNDS * 3

        mem = _open(path)
        try:
            assert mem.db.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            assert mem.fts_integrity() is None
            counts = Counter(str(r["content"]).lower() for r in mem.db.load_all())
            lost = [t for t in _tags() if counts[_fact(t)] == 0]
            assert not lost, f"facts lost in the race: {lost}"
            dups = sum(counts[_fact(t)] - 1 for t in _tags())
            final = mem.dream(force=True, strategy="heuristic")
            assert final.status != "failed", final
            counts = Counter(str(r["content"]).lower() for r in mem.db.load_all())
            wrong = {t: counts[_fact(t)] for t in _tags() if counts[_fact(t)] != 1}
            assert not wrong, f"facts not stored exactly once after the final dream: {wrong}"
            assert mem.fts_integrity() is None
        finally:
            mem.close()
    print(f"\nsqlite race ({'fresh' if fresh else 'existing'} db): {PROCESSES} processes x {ROUNDS} rounds "
          "(extract, recall, dream), "
          f"{len(_tags())} facts, 0 errors, 0 lost, {dups} duplicates before the final dream, 0 after; {elapsed:.1f} s")


class _UpdateModel:
    """Answers every extraction with one update of (user, editor<round>): each process its own content."""

    name = "update"

    def __init__(self, index: int) -> None:
        self.index = index

    def query(self, request: ModelRequest) -> ModelReply:
        text = "\n".join(m.content for m in request.messages)
        found = re.search(r"round (\d+)", text)
        data: dict[str, Any] = {"items": [{
            "type": "PREFERENCE", "subject": "user", "predicate": f"editor{found.group(1) if found else 'x'}",
            "content": f"the user now edits code in editor number {self.index}", "importance": 0.7,
            "duration": "permanent", "is_update": True}]} if request.purpose == EXTRACT_PURPOSE else {
            "summary": "-", "goal": "", "outcome": "success", "entities": [], "tools_used": []}
        return ModelReply(data, json.dumps(data), self.name)


def _updater(path: Path, log: Path, index: int) -> int:
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    mem = SqliteMemory(path, FixedClock(T0), _UpdateModel(index), identity_dir=path.parent / "identity")
    for r in range(UPDATE_ROUNDS):
        os.write(fd, f"{index}\tready{r}\n".encode())
        while not log.with_name(f"go{r}").exists():  # every round starts together
            time.sleep(0.0005)
        try:
            mem.add_turns(f"u{index}r{r}", [{"role": "user", "content": f"round {r}: I switched my code editor again"}])
            mem.extract(f"u{index}r{r}", strategy="model")
        except Exception as exc:  # logged for the parent's assertion
            os.write(fd, f"{index}\terror\t{type(exc).__name__}: {' '.join(str(exc).split())[:300]}\n".encode())
            return 1
    mem.close()
    return 0


UPDATE_ROUNDS = int(os.environ.get("MEMHARNESS_SQLITE_UPDATE_ROUNDS", "6"))


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_eight_processes_updating_one_subject_predicate_store_one_row() -> None:
    """Spec §7 Q23 (check-then-act, no transaction): eight processes extract, at the same moment, an update of the same
    subject+predicate that no row has yet. Each must either insert the row or merge into the one another inserted —
    never a second row for the pair (one process's update would then be invisible to find_similar's first match,
    and the pair would hold two contradicting contents)."""
    with scratch() as tmp:
        path, log = tmp / "m.db", tmp / "log"
        _open(path).close()

        def go() -> None:  # release each round once every process is waiting at it
            for r in range(UPDATE_ROUNDS):
                deadline = time.monotonic() + 60
                while log.read_text().count(f"\tready{r}\n") < PROCESSES:
                    assert time.monotonic() < deadline, f"round {r}: processes did not arrive"
                    time.sleep(0.001)
                log.with_name(f"go{r}").touch()

        codes = race_children(PROCESSES, lambda i: _updater(path, log, i), log, "\tready0\n", go)
        assert codes == [0] * PROCESSES, [line for line in log.read_text().splitlines() if "\terror\t" in line]
        mem = _open(path)
        try:
            pairs = Counter(str(r["predicate"]) for r in mem.db.load_all() if r["subject"] == "user")
            assert mem.fts_integrity() is None
        finally:
            mem.close()
        assert pairs == dict.fromkeys((f"editor{r}" for r in range(UPDATE_ROUNDS)), 1), pairs
