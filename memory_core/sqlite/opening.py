"""Opening one database file from several processes at once (issue 33): the WAL switch and the FTS check."""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable

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


def _sql(text: str) -> str:
    return " ".join(str(text).split()).rstrip(";").strip()


def own_triggers(script: str) -> dict[str, str]:
    """The triggers ``script`` creates: name → statement (whitespace folded)."""
    out = {}
    for statement in statements(script):
        found = re.match(r"CREATE\s+TRIGGER\s+(\w+)", statement, re.IGNORECASE)
        if found:
            out[found.group(1).lower()] = _sql(statement)
    return out


def fts_current(conn: sqlite3.Connection, tokenizer: str, script: str = "") -> bool:
    """The FTS table exists and was built with ``tokenizer``, and each trigger ``script`` creates is stored as written.

    fix (hostile probe, round 10): a dropped ``memories_fts_ai`` was accepted and never rebuilt, so rows written after
    were never indexed (recall's full-text path never found them). A missing or altered trigger of ours now makes the
    index not current: the open's write transaction recreates the table and its triggers and rebuilds the index."""
    stored = conn.execute("SELECT value FROM _schema_meta WHERE key='fts_tokenizer'").fetchone()
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE name='memories_fts'").fetchone()
    rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type='trigger'")
    have = {str(name).lower(): _sql(sql) for name, sql in rows}
    triggers = all(have.get(name) == sql for name, sql in own_triggers(script).items())
    return bool(exists and stored and stored[0] == tokenizer and triggers)


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
    if fts_current(conn, tokenizer, script):
        return
    conn.execute("BEGIN IMMEDIATE")  # fix: check and build in one transaction, not one per statement:
    if not fts_current(conn, tokenizer, script):  # processes opening a new file together raced (malformed FTS)
        for statement in statements(script):
            conn.execute(statement)
        conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")
        conn.execute("INSERT OR REPLACE INTO _schema_meta(key, value) VALUES ('fts_tokenizer', ?)", (tokenizer,))


def stored_version(conn: sqlite3.Connection, current: int) -> int | None:
    """The schema version the file says it has (None: a new file, or one without the version row).

    fix: a version this port does not know was rewritten to ``current`` on open: a newer program's database was
    silently claimed as this schema (issue 33). A version above ``current`` or one that is not a whole number is
    refused, with the file left as it was.
    """
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='_schema_meta'").fetchone():
        return None
    row = conn.execute("SELECT value FROM _schema_meta WHERE key='version'").fetchone()
    if row is None:
        return None
    text = str(row[0]).strip()
    if not text.isascii() or not text.isdigit():
        raise sqlite3.DatabaseError(f"schema version {str(row[0])[:40]!r} is not a whole number: not a database this port wrote")
    if int(text) > current:
        raise sqlite3.DatabaseError(f"schema version {int(text)} is newer than this port's ({current}): not opened, so a newer "
                         "program's data is not rewritten")
    return int(text)


def add_missing_columns(conn: sqlite3.Connection, schema: str) -> None:
    """Spec §2 "Schema version": below version 2, the v1→v2 migration adds each v2 column a table lacks (a column
    that appeared meanwhile is fine). Defaults come with the column; a ``NOT NULL`` column without a default is added
    nullable (SQLite cannot add it otherwise). A file without tables (a new one) has nothing to migrate."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'").fetchone():
        return
    reference = sqlite3.connect(":memory:")
    try:
        reference.executescript(schema)
        tables = [r[0] for r in reference.execute("SELECT name FROM sqlite_master WHERE type='table' "
                                                  "AND name NOT LIKE 'sqlite_%'")]
        for table in tables:
            have = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
            if not have:  # a table the file does not have yet: the schema script creates it whole
                continue
            for _cid, name, kind, notnull, default, _pk in reference.execute(f"PRAGMA table_info({table})"):
                if name in have:
                    continue
                clause = f" DEFAULT {default}" + (" NOT NULL" if notnull else "") if default is not None else ""
                try:
                    conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}{clause}")
                except sqlite3.OperationalError as exc:
                    if "duplicate column" not in str(exc):
                        raise
    finally:
        reference.close()


def refuse_foreign_triggers(conn: sqlite3.Connection, schema: str, ours: set[str]) -> None:
    """A trigger on one of ``schema``'s tables (or the FTS index's) that is not one of ``ours`` (by name) is refused.

    fix (hostile probe, round 10): a foreign trigger was kept and obeyed: ``BEFORE INSERT ... RAISE(IGNORE)`` made
    seed, extract and add_memory report ids for rows never stored; a trigger that deletes or rewrites rows would lose
    or change them just as silently. The port cannot tell a harmless trigger from one of those, and dropping another
    program's trigger would rewrite its database, so the file is not opened and is left as written (as a newer schema
    version is). Triggers on tables the port never writes are left alone."""
    tables = {t.lower() for t in re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", schema)}
    for name, table in conn.execute("SELECT name, tbl_name FROM sqlite_master WHERE type='trigger' ORDER BY name"):
        table = str(table).lower()
        if str(name).lower() not in ours and (table in tables or table.startswith("memories_fts")):
            raise sqlite3.DatabaseError(f"foreign trigger {str(name)[:60]!r} on table {table[:60]}: a trigger this port "
                                        "did not create could drop, block or rewrite its writes; not opened (drop the "
                                        "trigger to open the file)")


def repair_ids(conn: sqlite3.Connection, new_id: Callable[[], str]) -> int:
    """Give each memory row whose ``id`` is NULL (or a blob) a fresh id, in the open's write transaction; how many.

    fix (hostile probe, round 10): such a row read back as the id "None", which recall listed and forget could never
    delete (``WHERE id='None'``). ``TEXT PRIMARY KEY`` lets SQLite store NULLs; the port never writes one (a row saved
    without an id gets a fresh one, and this is that rule applied to a row another program wrote)."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='memories'").fetchone():
        return 0
    if not conn.in_transaction:
        conn.execute("BEGIN IMMEDIATE")
    rows = conn.execute("SELECT rowid FROM memories WHERE id IS NULL OR typeof(id) = 'blob'").fetchall()
    for (rowid,) in rows:
        for attempt in range(8):
            try:
                conn.execute("UPDATE memories SET id=? WHERE rowid=?", (new_id(), rowid))
                break
            except sqlite3.IntegrityError:  # a short (Q16) id that is taken
                if attempt == 7:
                    raise
    return len(rows)


def migrate(conn: sqlite3.Connection, schema: str, current: int, ours: set[str] | None = None) -> None:
    """In one write transaction: refuse a version this port does not know (``stored_version``) and a foreign trigger
    (``refuse_foreign_triggers``; ``ours``: the port's trigger names); below ``current`` (or with no version row), add
    the columns the file lacks (``add_missing_columns``)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = stored_version(conn, current)
        refuse_foreign_triggers(conn, schema, ours or set())
        if version is None or version < current:
            add_missing_columns(conn, schema)
    except BaseException:
        conn.rollback()
        raise
    conn.commit()
