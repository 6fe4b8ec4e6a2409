"""Opening one database file from several processes at once (issue 33): the WAL switch and the FTS check."""

from __future__ import annotations

import sqlite3
import time

from memory_core.clock import monotonic_ms


def set_wal(conn: sqlite3.Connection, busy_timeout_ms: int) -> None:
    """``PRAGMA journal_mode=WAL``, retried while the database is locked, up to the busy timeout.

    fix: SQLite answers this pragma "database is locked" at once, without its busy handler, while another process
    opens or converts the same new file: processes opening a new database together failed.
    """
    deadline = monotonic_ms() + busy_timeout_ms
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or monotonic_ms() > deadline:
                raise
            time.sleep(0.005)


def configure(conn: sqlite3.Connection, busy_timeout_ms: int) -> None:
    """WAL (retried while locked), ``synchronous=NORMAL``, the busy timeout, and every write transaction immediate.

    fix: a write outside ``atomic()`` began a deferred transaction, so its INSERT read first and then asked for the
    write lock; when another process had committed in between (a schema change above all: a process opening the file
    in the other quirk mode rebuilds the FTS table), SQLite answered "database is locked" at once, without the busy
    handler (3 of 8 processes in mixed-mode races, issue 33 F13). ``BEGIN IMMEDIATE`` takes the write lock first and
    waits for it like any other lock.
    """
    set_wal(conn, busy_timeout_ms)
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
    conn.isolation_level = "IMMEDIATE"


def fts_current(conn: sqlite3.Connection, tokenizer: str) -> bool:
    """The FTS table exists and was built with ``tokenizer``."""
    stored = conn.execute("SELECT value FROM _schema_meta WHERE key='fts_tokenizer'").fetchone()
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE name='memories_fts'").fetchone()
    return bool(exists and stored and stored[0] == tokenizer)


def statements(script: str) -> list[str]:
    """A script's statements one by one (a trigger's body keeps its own semicolons), to run inside a transaction
    (``executescript`` commits first and then runs each statement in its own)."""
    out, buf = [], ""
    for part in script.split(";"):
        buf += part + ";"
        if sqlite3.complete_statement(buf):
            if buf.strip(" \n;"):
                out.append(buf.strip())
            buf = ""
    return out


def ensure_fts(conn: sqlite3.Connection, tokenizer: str, script: str) -> None:
    """Build the FTS table with ``tokenizer`` (``script``: drop and create) unless it is current, then fill it."""
    if fts_current(conn, tokenizer):
        return
    conn.execute("BEGIN IMMEDIATE")  # fix: check and build in one transaction, not one per statement:
    if not fts_current(conn, tokenizer):  # processes opening a new file together raced (malformed FTS)
        for statement in statements(script):
            conn.execute(statement)
        conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")
        conn.execute("INSERT OR REPLACE INTO _schema_meta(key, value) VALUES ('fts_tokenizer', ?)", (tokenizer,))
