"""The SQLite layer (spec §2): connection, schema, the external-content FTS5 index and its triggers, memory CRUD.

Errors: a locked, corrupt or unreadable database raises ``SqliteMemoryError`` naming the db file (never swallowed:
a swallowed write is a lost row). Only an FTS ``MATCH`` syntax error is turned into ``[]`` (the seed's behaviour,
spec §4.3 step 4), and only the quoting fix (Q2) makes that unreachable.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from memory_core.clock import Clock
from memory_core.errors import MemoryCoreError
from memory_core.sqlite.opening import configure, ensure_fts, migrate, own_triggers, repair_ids
from memory_core.sqlite.quirks import Quirks
from memory_core.sqlite.rows import DEFAULTS, memory_row
from memory_core.sqlite.stamps import iso

SCHEMA_VERSION: Final = 2
BUSY_TIMEOUT_MS: Final = 5000
LIKE_MAX_BYTES: Final = 50_000
"""SQLite's ``SQLITE_MAX_LIKE_PATTERN_LENGTH`` (default build)."""
MEMORY_COLUMNS: Final = (
    "id", "content", "type", "priority", "source", "importance_score", "access_count", "tags", "created_at",
    "updated_at", "expires_at", "metadata", "subject", "predicate", "confidence", "decay_rate", "last_accessed_at",
    "superseded_by", "source_episode_id",
)
UPDATABLE: Final = frozenset(MEMORY_COLUMNS[1:]) - {"created_at", "expires_at"}
"""``update_memory``'s allow-list (spec §2.1): ``expires_at`` is not on it (Q8)."""
_FTS_COLUMNS: Final = "content, subject, predicate, tags"
_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS _schema_meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS memories(
    id TEXT PRIMARY KEY, content TEXT NOT NULL, type TEXT NOT NULL DEFAULT 'FACT',
    priority TEXT NOT NULL DEFAULT 'SHORT_TERM', source TEXT DEFAULT '', importance_score REAL DEFAULT 0.5,
    access_count INTEGER DEFAULT 0, tags TEXT DEFAULT '[]', created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    expires_at TEXT, metadata TEXT DEFAULT '{}', subject TEXT DEFAULT '', predicate TEXT DEFAULT '',
    confidence REAL DEFAULT 0.5, decay_rate REAL DEFAULT 0.1, last_accessed_at TEXT, superseded_by TEXT,
    source_episode_id TEXT);
CREATE INDEX IF NOT EXISTS idx_memories_type ON memories(type);
CREATE INDEX IF NOT EXISTS idx_memories_priority ON memories(priority);
CREATE INDEX IF NOT EXISTS idx_memories_created ON memories(created_at);
CREATE INDEX IF NOT EXISTS idx_memories_importance ON memories(importance_score);
CREATE INDEX IF NOT EXISTS idx_memories_subject ON memories(subject);
CREATE TABLE IF NOT EXISTS episodes(
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL, summary TEXT NOT NULL, goal TEXT DEFAULT '',
    outcome TEXT DEFAULT 'completed', started_at TEXT NOT NULL, ended_at TEXT NOT NULL, action_nodes TEXT DEFAULT '[]',
    entities TEXT DEFAULT '[]', tools_used TEXT DEFAULT '[]', linked_memory_ids TEXT DEFAULT '[]',
    tags TEXT DEFAULT '[]', importance_score REAL DEFAULT 0.5, access_count INTEGER DEFAULT 0,
    source TEXT DEFAULT 'session_end');
CREATE INDEX IF NOT EXISTS idx_episodes_session ON episodes(session_id);
CREATE INDEX IF NOT EXISTS idx_episodes_started ON episodes(started_at);
CREATE INDEX IF NOT EXISTS idx_episodes_outcome ON episodes(outcome);
CREATE TABLE IF NOT EXISTS scratchpad(
    user_id TEXT PRIMARY KEY, content TEXT DEFAULT '', active_projects TEXT DEFAULT '[]', current_focus TEXT DEFAULT '',
    open_questions TEXT DEFAULT '[]', next_steps TEXT DEFAULT '[]', updated_at TEXT);
CREATE TABLE IF NOT EXISTS conversation_turns(
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, turn_index INTEGER NOT NULL, role TEXT NOT NULL,
    content TEXT DEFAULT '', tool_calls TEXT, tool_results TEXT, has_tool_calls BOOLEAN DEFAULT FALSE,
    timestamp TEXT NOT NULL, token_estimate INTEGER DEFAULT 0, episode_id TEXT, extracted BOOLEAN DEFAULT FALSE,
    UNIQUE(session_id, turn_index));
CREATE INDEX IF NOT EXISTS idx_turns_session ON conversation_turns(session_id);
CREATE INDEX IF NOT EXISTS idx_turns_timestamp ON conversation_turns(timestamp);
CREATE INDEX IF NOT EXISTS idx_turns_tools ON conversation_turns(has_tool_calls);
CREATE INDEX IF NOT EXISTS idx_turns_extracted ON conversation_turns(extracted);
CREATE TABLE IF NOT EXISTS extraction_queue(
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, turn_index INTEGER NOT NULL,
    content TEXT NOT NULL, tool_calls TEXT, tool_results TEXT, retry_count INTEGER DEFAULT 0,
    max_retries INTEGER DEFAULT 3, status TEXT DEFAULT 'pending', created_at TEXT NOT NULL, last_attempted_at TEXT);
CREATE UNIQUE INDEX IF NOT EXISTS idx_queue_unique ON extraction_queue(session_id, turn_index);
"""
_FTS: Final = f"""
CREATE VIRTUAL TABLE memories_fts USING fts5({_FTS_COLUMNS}, content=memories, content_rowid=rowid, tokenize='{{tok}}');
CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories BEGIN
  INSERT INTO memories_fts(rowid, {_FTS_COLUMNS}) VALUES (new.rowid, new.content, new.subject, new.predicate, new.tags);
END;
CREATE TRIGGER memories_fts_ad AFTER DELETE ON memories BEGIN
  INSERT INTO memories_fts(memories_fts, rowid, {_FTS_COLUMNS})
  VALUES ('delete', old.rowid, old.content, old.subject, old.predicate, old.tags);
END;
CREATE TRIGGER memories_fts_au AFTER UPDATE ON memories BEGIN
  INSERT INTO memories_fts(memories_fts, rowid, {_FTS_COLUMNS})
  VALUES ('delete', old.rowid, old.content, old.subject, old.predicate, old.tags);
  INSERT INTO memories_fts(rowid, {_FTS_COLUMNS}) VALUES (new.rowid, new.content, new.subject, new.predicate, new.tags);
END;
"""
_FTS_DROP: Final = """
DROP TRIGGER IF EXISTS memories_fts_ai; DROP TRIGGER IF EXISTS memories_fts_ad; DROP TRIGGER IF EXISTS memories_fts_au;
DROP TABLE IF EXISTS memories_fts;
"""
_TRANSIENT_MARKERS: Final = ("locked", "busy", "malformed", "not a database", "unable to open", "readonly", "disk i/o")


class SqliteMemoryError(MemoryCoreError):
    """The SQLite memory database cannot be used (locked, corrupt, unreadable); the message names the db file."""


_UNDECODABLE: Final = UnicodeDecodeError
"""What ``sqlite3`` raises, instead of an ``sqlite3.Error``, when a damaged file makes SQLite's message invalid UTF-8."""


def _line(exc: BaseException) -> str:
    """An error's text on one line (SQLite quotes a damaged schema's ``CREATE`` statement, newlines and all)."""
    return " ".join(str(exc).split())


def _encode(key: str, value: Any) -> Any:
    return json.dumps(value, ensure_ascii=False) if key in ("tags", "metadata") and not isinstance(value, str) else value


class Database:
    """One connection (WAL, ``synchronous=NORMAL``, busy timeout), a process-wide lock, a commit after each write."""

    def __init__(self, path: Path, clock: Clock, quirks: Quirks, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS,
                 id_factory: Callable[[], str] | None = None) -> None:
        self.path = Path(path)
        self.clock = clock
        self.quirks = quirks
        self._lock = threading.RLock()
        self._keeping = threading.local()
        self._depth = 0  # open atomic() blocks (under the lock)
        self._id_factory = id_factory or (lambda: uuid.uuid4().hex)
        self.tokenizer = "unicode61" if quirks.q3_cjk_unsegmented else "trigram"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=busy_timeout_ms / 1000)
        except (OSError, sqlite3.Error, _UNDECODABLE) as exc:  # fix: a damaged file's error is one line, never raw
            raise SqliteMemoryError(f"{self.path}: cannot open database: {_line(exc)}") from exc
        self.conn.row_factory = sqlite3.Row
        try:
            with self.guard("open"):
                configure(self.conn, busy_timeout_ms)
                fts = _FTS_DROP + _FTS.replace("{tok}", self.tokenizer)
                migrate(self.conn, _SCHEMA, SCHEMA_VERSION, set(own_triggers(fts)))
                self.conn.executescript(_SCHEMA)
                ensure_fts(self.conn, self.tokenizer, fts)
                repair_ids(self.conn, self.new_id)
                self.conn.execute("INSERT OR REPLACE INTO _schema_meta(key, value) VALUES ('version', ?)",
                                  (str(SCHEMA_VERSION),))
                self.conn.commit()
        except SqliteMemoryError:
            self.conn.close()
            raise

    @contextmanager
    def guard(self, action: str) -> Iterator[sqlite3.Connection]:
        """Hold the lock; turn any SQLite error into one ``SqliteMemoryError`` line naming the db file."""
        with self._lock:
            try:
                yield self.conn
            except (sqlite3.Error, _UNDECODABLE) as exc:  # fix: a damaged file's error is one line, never raw
                with suppress(sqlite3.Error):
                    self.conn.rollback()
                raise SqliteMemoryError(f"{self.path}: {action} failed: {_line(exc)}") from exc

    def _commit(self, conn: sqlite3.Connection) -> None:
        if not self._depth:  # inside atomic() the block's end commits
            conn.commit()

    @contextmanager
    def atomic(self, action: str) -> Iterator[None]:
        """fix: spec §7 Q23 — a check and the write it decides in one write transaction (``BEGIN IMMEDIATE``): another
        process's check waits for the write, so two extractions of one subject+predicate cannot both insert."""
        with self.guard(action) as conn:
            if not self._depth:
                conn.execute("BEGIN IMMEDIATE")
            self._depth += 1
            try:
                yield
            except BaseException:
                self._depth -= 1
                if not self._depth:
                    conn.rollback()
                raise
            self._depth -= 1
            if not self._depth:
                conn.commit()

    def close(self) -> None:  # the connection
        with self._lock:
            self.conn.close()

    def now(self) -> str:
        """The clock's current time as a stored timestamp."""
        return iso(self.clock.now())

    def now_naive(self) -> datetime:
        """The clock's current time as a naive UTC datetime (what stored timestamps denote)."""
        return datetime.fromisoformat(self.now())

    def new_id(self) -> str:
        """A memory id: 8 hex characters at the seed (Q16), a full collision-checked uuid4 hex when fixed."""
        if self.quirks.q16_short_ids:
            return self._id_factory()[:8]
        for _ in range(8):
            candidate = self._id_factory()
            if self.get_memory(candidate) is None:
                return candidate
        raise SqliteMemoryError(f"{self.path}: could not draw a fresh memory id")  # fix: spec §7 Q16

    def new_uuid(self) -> str:
        """An episode id: a dashed uuid made from the id factory's 32 hex characters (uuid4 unless injected)."""
        return str(uuid.UUID(hex=self._id_factory()))

    # ----------------------------------------------------------------------------------------------------- memories
    def save_memory(self, memory: Mapping[str, Any], *, keep_timestamps: bool = False) -> str:
        """Insert or overwrite a memory: ``INSERT OR REPLACE`` at the seed (Q5), an UPSERT when fixed.

        ``updated_at`` is set to now unless ``keep_timestamps`` (fixtures backdating a row, spec Q14).
        """
        now = self.now()
        row = {**DEFAULTS, **{k: v for k, v in memory.items() if k in MEMORY_COLUMNS}}
        if not row.get("id"):
            row["id"] = self.new_id()
        if not row.get("created_at"):
            row["created_at"] = now
        if not keep_timestamps or not row.get("updated_at"):
            row["updated_at"] = now
        values = [_encode(c, row[c]) for c in MEMORY_COLUMNS]
        cols, marks = ", ".join(MEMORY_COLUMNS), ", ".join("?" * len(MEMORY_COLUMNS))
        if self.quirks.q5_insert_or_replace:
            sql = f"INSERT OR REPLACE INTO memories({cols}) VALUES ({marks})"
        else:  # fix: spec §7 Q5 — UPSERT keeps the rowid, so the update trigger keeps FTS in sync
            sets = ", ".join(f"{c}=excluded.{c}" for c in MEMORY_COLUMNS[1:])
            sql = f"INSERT INTO memories({cols}) VALUES ({marks}) ON CONFLICT(id) DO UPDATE SET {sets}"
        with self.guard("save memory") as conn:
            if conn.execute(sql, values).rowcount < 1:  # fix: never an id for a row not stored (a trigger's IGNORE)
                raise sqlite3.DatabaseError(f"memory {row['id']!r} was not stored (a trigger ignored the write)")
            self._commit(conn)
        return str(row["id"])

    def update_memory(self, memory_id: str, changes: Mapping[str, Any]) -> bool:
        """Partial update limited to the allow-list; ``updated_at`` defaults to now (Q14)."""
        data = {k: v for k, v in changes.items() if k in UPDATABLE}
        data.setdefault("updated_at", self.now())
        sets = ", ".join(f"{k}=?" for k in data)
        with self.guard("update memory") as conn:
            cur = conn.execute(f"UPDATE memories SET {sets} WHERE id=?", [*(_encode(k, v) for k, v in data.items()), memory_id])
            self._commit(conn)
        return cur.rowcount > 0

    def set_expiry(self, memory_id: str, expires_at: str | None) -> None:
        """Set ``expires_at`` directly (only the Q8 fix uses it; ``update_memory`` cannot)."""
        with self.guard("set expiry") as conn:
            conn.execute("UPDATE memories SET expires_at=? WHERE id=?", (expires_at, memory_id))
            self._commit(conn)

    def get_memory(self, memory_id: str) -> dict[str, Any] | None:
        """One row by id (no access bump, spec §4.5)."""
        with self.guard("read memory") as conn:
            row = conn.execute("SELECT * FROM memories WHERE id=?", (memory_id,)).fetchone()
            return memory_row(row) if row else None

    def delete_memory(self, memory_id: str) -> bool:
        """Delete by id; the delete trigger removes the FTS entry. Inside ``keeping(k)``: only while row k exists."""
        keeper = getattr(self._keeping, "id", None)
        sql = "DELETE FROM memories WHERE id=?" + ("" if keeper is None else " AND EXISTS (SELECT 1 FROM memories WHERE id=?)")
        with self.guard("delete memory") as conn:
            cur = conn.execute(sql, (memory_id,) if keeper is None else (memory_id, keeper))
            self._commit(conn)
        return cur.rowcount > 0

    @contextmanager
    def keeping(self, keeper: str) -> Iterator[None]:
        """fix: spec §7 Q23 — this thread's deletes inside go only while row ``keeper`` is stored (one statement), so
        two processes deduping from different snapshots cannot each delete the copy the other kept."""
        self._keeping.id = keeper
        try:
            yield
        finally:
            self._keeping.id = None

    def query(self, *, memory_type: str | None = None, priority: str | None = None, source: str | None = None,
              min_importance: float | None = None, subject: str | None = None, limit: int = 50,
              offset: int = 0) -> list[dict[str, Any]]:
        """Exact, case-sensitive filters (``min_importance`` is ``>=``), by importance then created, newest first."""
        where: list[str] = []
        args: list[Any] = []
        for col, val in (("type", memory_type), ("priority", priority), ("source", source), ("subject", subject)):
            if val is not None:
                where.append(f"{col} = ?")
                args.append(val)
        if min_importance is not None:
            where.append("importance_score >= ?")
            args.append(min_importance)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        sql = f"SELECT * FROM memories {clause} ORDER BY importance_score DESC, created_at DESC LIMIT ? OFFSET ?"
        with self.guard("query memories") as conn:
            return [memory_row(r) for r in conn.execute(sql, [*args, limit, offset]).fetchall()]

    def load_all(self) -> list[dict[str, Any]]:
        """Every memory, newest created first."""
        with self.guard("load memories") as conn:
            sql = "SELECT rowid AS _rowid, * FROM memories ORDER BY created_at DESC, rowid DESC"
            return [memory_row(r) for r in conn.execute(sql).fetchall()]

    def search_fts(self, match: str, limit: int) -> list[tuple[dict[str, Any], float]]:
        """Rows matching an FTS5 expression with their ``bm25`` rank, best first; a MATCH syntax error gives ``[]``."""
        sql = ("SELECT m.*, bm25(memories_fts) AS rank FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid "
               "WHERE memories_fts MATCH ? ORDER BY rank LIMIT ?")
        with self._lock:
            try:
                rows = self.conn.execute(sql, (match, limit)).fetchall()
            except sqlite3.OperationalError as exc:
                if any(marker in str(exc).lower() for marker in _TRANSIENT_MARKERS):
                    raise SqliteMemoryError(f"{self.path}: full-text search failed: {_line(exc)}") from exc
                return []  # the seed logs at debug level and returns [] (spec §4.3 step 4)
            except (sqlite3.Error, _UNDECODABLE) as exc:  # fix: a damaged file's error is one line, never raw
                raise SqliteMemoryError(f"{self.path}: full-text search failed: {_line(exc)}") from exc
        out = []
        with self.guard("full-text search"):
            for r in rows:
                data = memory_row(r)
                out.append((data, float(data.pop("rank"))))
        return out

    def search_like(self, keywords: Sequence[str], limit: int, *, escape: bool) -> list[dict[str, Any]]:
        """Rows whose content contains any keyword (``LIKE``); ``escape`` makes ``%``/``_`` literal (Q22 fix)."""
        if not keywords:
            return []
        tests = [like_test(k, escape=escape) or ("{} LIKE ?", f"%{k}%") for k in keywords]  # the seed's may raise
        where = " OR ".join(test.format("content") for test, _ in tests)
        with self.guard("like search") as conn:
            rows = conn.execute(f"SELECT * FROM memories WHERE {where} LIMIT ?", [*(a for _, a in tests), limit])
            return [memory_row(r) for r in rows]

    def cleanup_expired(self) -> int:
        """Delete every row with ``expires_at < now`` (ISO string comparison)."""
        with self.guard("cleanup expired") as conn:
            cur = conn.execute("DELETE FROM memories WHERE expires_at IS NOT NULL AND expires_at < ?", (self.now(),))
            self._commit(conn)
        return cur.rowcount

    def fts_integrity(self) -> str | None:
        """None if the FTS index matches the ``memories`` table, else SQLite's complaint (FTS5 ``integrity-check``)."""
        with self._lock:
            try:
                self.conn.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)")
            except (sqlite3.ProgrammingError, sqlite3.OperationalError, _UNDECODABLE) as exc:  # closed, locked: not a verdict
                raise SqliteMemoryError(f"{self.path}: integrity check failed: {_line(exc)}") from exc
            except sqlite3.DatabaseError as exc:
                return str(exc)
        return None

    def fts_orphans(self) -> int:
        """FTS rows whose rowid has no ``memories`` row."""
        with self.guard("count fts orphans") as conn:
            sql = "SELECT count(*) FROM memories_fts_docsize WHERE id NOT IN (SELECT rowid FROM memories)"
            return int(conn.execute(sql).fetchone()[0])


def like_escape(text: str) -> str:
    """Escape ``\\``, ``%`` and ``_`` for ``LIKE ... ESCAPE '\\'``."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def like_test(keyword: str, *, escape: bool) -> tuple[str, str] | None:
    """SQL testing whether column ``{}`` contains ``keyword``, and its argument (``escape``: the Q22 fix)."""
    pattern = f"%{like_escape(keyword) if escape else keyword}%"
    if len(pattern.encode("utf-8", "replace")) <= LIKE_MAX_BYTES:
        return "{} LIKE ?" + (" ESCAPE '\\'" if escape else ""), pattern
    return ("instr(lower({}), lower(?)) > 0", keyword) if escape else None  # fix: "pattern too complex"; same test
