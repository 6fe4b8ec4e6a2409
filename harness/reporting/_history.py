"""Run history in SQLite (standard-library ``sqlite3``): every run appends its summary; the report and
``memharness history`` read the trend of the headline metrics.

Writes are one ``BEGIN IMMEDIATE`` transaction each (schema, migration and rows together), so runs appending at
once serialise and lose no row: a database another process holds is waited for (SQLite's busy timeout, then
retries) for up to ``HISTORY_WAIT_S`` seconds. A missing or corrupt database, or one held longer than that, costs a
one-line warning on stderr and never fails a run.

Every value read is checked, in ``_read`` only: a row holding a value of a type the history never writes (a blob, text
that is not UTF-8, text where a number belongs…) is left out, and the rows left out are said once, in one line naming
the file and the columns.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypeVar

from harness.errors import one_line
from harness.evaluation import RunSummary

HISTORY_FILE: Final = "history.sqlite"
HISTORY_WAIT_S: float = 60.0
"""How long an append or a read waits, in all, for a history database another process holds."""
BUSY_TIMEOUT_S: float = 5.0
"""SQLite's busy timeout of one attempt; a busy attempt is retried until ``HISTORY_WAIT_S`` has passed."""
_T = TypeVar("_T")
TREND_METRICS: Final = ("recall.precision", "recall.recall", "recall.f1", "recall.mrr", "dedupe.retention",
                        "latency.recall_ms.p95")
_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, created_at TEXT NOT NULL, git_commit TEXT NOT NULL DEFAULT '',
    passed INTEGER NOT NULL, complete INTEGER NOT NULL, out_dir TEXT NOT NULL DEFAULT '', key TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS metrics (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, strategy TEXT NOT NULL, metric TEXT NOT NULL,
    value REAL, PRIMARY KEY (run_id, strategy, metric));
"""
CORRUPT: Final = (sqlite3.Error, ValueError, OverflowError, MemoryError)
"""What a damaged history file can raise while it is read or written: SQLite's errors, ``UnicodeDecodeError`` (a
``ValueError``: SQLite's message quoting a damaged schema is not UTF-8), and a huge or out-of-range value."""


@dataclass(frozen=True, slots=True)
class HistoryRun:
    """One past run: its headline metrics per strategy (None = no data)."""

    run_id: str
    created_at: str
    git_commit: str
    passed: bool
    complete: bool
    metrics: dict[str, dict[str, float | None]]
    """strategy → metric → value."""
    key: str = ""
    """What the run compared: its systems and strategies (``run_key``); a trend joins runs of one key only."""

    def metric(self, strategy: str, name: str) -> float | None:
        return self.metrics.get(strategy, {}).get(name)


def history_path(out: Path, environ: Mapping[str, str] | None = None) -> Path:
    """``$MEMHARNESS_HISTORY`` when set, else ``history.sqlite`` beside the run directory (``reports/`` by default)."""
    env = os.environ if environ is None else environ
    override = env.get("MEMHARNESS_HISTORY")
    return Path(override) if override else out.resolve().parent / HISTORY_FILE


def _warn(db: Path, exc: BaseException) -> None:
    print(one_line(f"memharness: warning: run history {db} not updated/read ({type(exc).__name__}: {exc})"),
          file=sys.stderr)


def _warn_skipped(db: Path, what: str) -> None:
    print(one_line(f"memharness: warning: run history {db}: {what}"), file=sys.stderr)


def run_key(summary: RunSummary) -> str:
    """``systems | strategies`` of a run: runs of different systems or strategy sets are different trends."""
    meta = summary.meta or {}
    systems = meta.get("systems") or [meta.get("system") or "reference"]
    return f"{','.join(map(str, systems))} | {','.join(summary.strategies)}"


_SCHEMA_STATEMENTS: Final = tuple(part.strip() for part in _SCHEMA.split(";") if part.strip())


def _busy(exc: sqlite3.Error) -> bool:
    """SQLITE_BUSY or SQLITE_LOCKED: another connection holds the database (worth waiting for, never reported)."""
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def _patiently(db: Path, attempt: Callable[[], _T]) -> _T:
    """``attempt()``, retried while the database is busy, until ``HISTORY_WAIT_S`` has passed; then one error that
    says what happened (not SQLite's "database is locked")."""
    deadline = time.monotonic() + HISTORY_WAIT_S
    pause = 0.01
    while True:
        try:
            return attempt()
        except sqlite3.Error as exc:
            if not _busy(exc):
                raise
            if time.monotonic() + pause > deadline:
                raise sqlite3.OperationalError(
                    f"another process held the history for over {HISTORY_WAIT_S:g} s; this run is not in it") from None
        time.sleep(pause)
        pause = min(pause * 2, 0.5)


def _text(raw: bytes) -> str | bytes:
    """SQLite text as ``str``; text that is not UTF-8 stays ``bytes``: a value of the wrong type, not an error."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def _connect(db: Path, *, read_only: bool = False) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit) with the busy timeout."""
    if read_only:
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S,
                               isolation_level=None)  # '#', '?', '%' in the path encoded
    else:
        conn = sqlite3.connect(db, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        conn.execute("PRAGMA foreign_keys = ON")
    conn.text_factory = _text
    return conn


def _write(db: Path, summary: RunSummary, rows: Sequence[tuple[str, str, str, float | None]],
           out_dir: Path | None) -> None:
    """One attempt: schema, migration and this run's rows in one ``BEGIN IMMEDIATE`` transaction."""
    conn = _connect(db)
    try:
        conn.execute("BEGIN IMMEDIATE")  # the write lock first: two writers never deadlock upgrading a read lock
        try:
            for statement in _SCHEMA_STATEMENTS:
                conn.execute(statement)
            if "key" not in {row[1] for row in conn.execute("PRAGMA table_info(runs)")}:  # a history from before keys
                conn.execute("ALTER TABLE runs ADD COLUMN key TEXT NOT NULL DEFAULT ''")
            run_id = _free_run_id(conn, summary)
            conn.execute("DELETE FROM metrics WHERE run_id = ?", (run_id,))
            conn.execute("INSERT OR REPLACE INTO runs (run_id, created_at, git_commit, passed, complete, out_dir, key)"
                         " VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (run_id, summary.created_at, str(summary.meta.get("git_commit") or ""),
                          int(summary.passed), int(bool(getattr(summary, "complete", True))), str(out_dir or ""),
                          run_key(summary)))
            conn.executemany("INSERT INTO metrics VALUES (?, ?, ?, ?)", [(run_id, *row[1:]) for row in rows])
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    finally:
        conn.close()


def _free_run_id(conn: sqlite3.Connection, summary: RunSummary) -> str:
    """The run's id, or ``ID~2``, ``ID~3``… when another run already holds it (a CI that sets ``MEMHARNESS_RUN_ID``
    from its pipeline and runs a job twice): no run replaces another's row. The same run recorded again (same id,
    same creation time) replaces its own row."""
    run_id, n = summary.run_id, 2
    while (row := conn.execute("SELECT created_at FROM runs WHERE run_id = ?", (run_id,)).fetchone()) is not None \
            and row[0] != summary.created_at:
        run_id, n = f"{summary.run_id}~{n}", n + 1
    return run_id


def append_run(db: Path, summary: RunSummary, *, out_dir: Path | None = None,
               warn: Callable[[Path, BaseException], None] = _warn) -> bool:
    """Append one run in one transaction (the same run again replaces its row; another run with the same id is
    stored as ``ID~2``…). False (and a warning) when the db is unusable."""
    rows = [(summary.run_id, strategy, metric, block.metric(metric))
            for strategy, block in summary.strategies.items() for metric in TREND_METRICS]
    try:
        db.parent.mkdir(parents=True, exist_ok=True)
        _patiently(db, lambda: _write(db, summary, rows, out_dir))
    except (*CORRUPT, OSError) as exc:
        warn(db, exc)
        return False
    return True


def read_history(db: Path, *, limit: int = 20, key: str | None = None,
                 warn: Callable[[Path, BaseException], None] = _warn,
                 skipped: Callable[[Path, str], None] = _warn_skipped) -> list[HistoryRun]:
    """The last ``limit`` runs (of ``key`` only, when given), oldest first; [] (and a warning when it exists but is
    unreadable) otherwise. Rows with a value of the wrong type are left out and told to ``skipped``, once."""
    bad: list[str] = []
    try:
        if not db.exists():
            return []
        if not db.is_file():  # a FIFO or device would block sqlite's open
            raise OSError(f"{db} is not a regular file")
        runs = _patiently(db, lambda: _read(db, limit, key, bad))
    except (*CORRUPT, OSError) as exc:
        warn(db, exc)
        return []
    if bad:
        skipped(db, f"left out {len(bad)} row(s) holding a value of the wrong type ({', '.join(dict.fromkeys(bad))})")
    return runs


class _WrongType(Exception):
    """A value read of a type the history never writes; its message is the ``table.column``."""


def _str(value: object, where: str) -> str:
    if isinstance(value, str):
        return value
    raise _WrongType(where)


def _flag(value: object, where: str) -> bool:
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    raise _WrongType(where)


def _number(value: object, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    raise _WrongType(where)


def _read(db: Path, limit: int, key: str | None, bad: list[str]) -> list[HistoryRun]:
    """One attempt at reading, in one read transaction (a run is seen whole or not at all). The one place rows are
    read: every value is checked here; a row with a wrong-typed value is left out and its column added to ``bad``."""
    bad.clear()  # a retried attempt starts over
    conn = _connect(db, read_only=True)
    try:
        conn.execute("BEGIN")
        columns = {row[1] for row in conn.execute("PRAGMA table_info(runs)")}
        keyed = "key" if "key" in columns else "''"  # a history from before keys, read-only: no migration
        runs = conn.execute(f"SELECT run_id, created_at, git_commit, passed, complete, {keyed} FROM runs "
                            f"WHERE ? IS NULL OR {keyed} = ? ORDER BY created_at DESC, rowid DESC LIMIT ?",
                            (key, key, min(max(limit, 0), sys.maxsize))).fetchall()
        out: list[HistoryRun] = []
        for row in reversed(runs):
            try:
                run_id, created_at, commit, run_of = (_str(row[i], f"runs.{name}") for i, name in
                                                      ((0, "run_id"), (1, "created_at"), (2, "git_commit"), (5, "key")))
                passed, complete = _flag(row[3], "runs.passed"), _flag(row[4], "runs.complete")
            except _WrongType as exc:
                bad.append(str(exc))
                continue
            metrics: dict[str, dict[str, float | None]] = {}
            for strategy, metric, value in conn.execute(
                    "SELECT strategy, metric, value FROM metrics WHERE run_id = ?", (run_id,)):
                try:
                    name, number = _str(metric, "metrics.metric"), _number(value, "metrics.value")
                    metrics.setdefault(_str(strategy, "metrics.strategy"), {})[name] = number
                except _WrongType as exc:
                    bad.append(str(exc))
            out.append(HistoryRun(run_id, created_at, commit, passed, complete, metrics, run_of))
        conn.execute("COMMIT")
    finally:
        conn.close()
    return out


def history_json(runs: Sequence[HistoryRun]) -> str:
    """The trend data the report's chart reads."""
    return json.dumps([{"run_id": r.run_id, "created_at": r.created_at, "git_commit": r.git_commit[:10],
                        "passed": r.passed, "complete": r.complete, "metrics": r.metrics} for r in runs])


def record_history(out: Path, summary: RunSummary, *, environ: Mapping[str, str] | None = None,
                   skipped: Sequence[str] = ()) -> bool:
    """Append this run to the history beside ``out`` (see ``history_path``) once its run directory is written (a run
    whose directory could not be written is no run: no row for it). A shard is not a run of the suite: it is not
    recorded (its merge is), so no history file lands among the shard directories ``memharness merge`` reads.
    ``skipped``: what ``preview_history`` left out, said after a successful append (a failed one says its own
    warning instead): a run prints one warning line about its history at most."""
    if (summary.meta or {}).get("shard"):
        return False
    db = history_path(out, environ)
    if not append_run(db, summary, out_dir=out):
        return False
    if skipped:
        _warn_skipped(db, skipped[0])
    return True


def preview_history(out: Path, summary: RunSummary, *, limit: int = 20, environ: Mapping[str, str] | None = None,
                    skipped: Callable[[str], None] = lambda _: None) -> list[HistoryRun]:
    """The trend the report shows: the last runs of the same systems and strategies, oldest first, then this one
    (a shard's report: the recorded runs only). Reads only; an unreadable history gives what it can, silently
    (``record_history`` warns when it tries to write); rows it left out are told to ``skipped``, for
    ``record_history`` to say."""
    runs = [r for r in read_history(history_path(out, environ), limit=limit, key=run_key(summary),
                                    warn=lambda *_: None, skipped=lambda _, what: skipped(what))
            if (r.run_id, r.created_at) != (summary.run_id, summary.created_at)]
    if not (summary.meta or {}).get("shard"):
        runs.append(HistoryRun(summary.run_id, summary.created_at, str(summary.meta.get("git_commit") or ""),
                               summary.passed, bool(getattr(summary, "complete", True)),
                               {strategy: {metric: block.metric(metric) for metric in TREND_METRICS}
                                for strategy, block in summary.strategies.items()}, run_key(summary)))
    return runs[-limit:] if limit > 0 else []
