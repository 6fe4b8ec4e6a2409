"""Episodes, conversation turns and the extraction retry queue (spec §2.2, §3.9)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, Final

from memory_core.sqlite.db import Database, like_test
from memory_core.sqlite.rows import clamp_numbers
from memory_core.sqlite.stamps import iso, parse_iso

QUEUE_MAX_RETRIES: Final = 3
TURN_INDEX_MAX: Final = 2**63 - 1
"""SQLite's largest integer: a session whose last turn holds it has no next index."""
STUCK_AFTER: Final = timedelta(minutes=30)
_EPISODE_JSON: Final = ("action_nodes", "entities", "tools_used", "linked_memory_ids", "tags")


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False)


def _episode(row: Mapping[str, Any]) -> dict[str, Any]:
    data = dict(row)
    for key in _EPISODE_JSON:
        try:
            data[key] = json.loads(data.get(key) or "[]")
        except json.JSONDecodeError:
            data[key] = []
    clamp_numbers(data, "episode", {"importance_score": 0.5, "access_count": 0})  # as a memory row's (rows.py)
    return data


# ------------------------------------------------------------------------------------------------------------ episodes
def save_episode(db: Database, episode: Mapping[str, Any]) -> str:
    """Insert an episode (a full uuid id from the database's id factory); JSON lists are encoded."""
    row = {"id": db.new_uuid(), "goal": "", "outcome": "completed", "importance_score": 0.5, "access_count": 0,
           "source": "session_end", **episode}
    cols = ["id", "session_id", "summary", "goal", "outcome", "started_at", "ended_at", *_EPISODE_JSON,
            "importance_score", "access_count", "source"]
    values = [_json(row.get(c) or []) if c in _EPISODE_JSON else row.get(c) for c in cols]
    with db.guard("save episode") as conn:
        conn.execute(f"INSERT INTO episodes({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", values)
        conn.commit()
    return str(row["id"])


def search_episodes(db: Database, entity: str, limit: int = 3) -> list[dict[str, Any]]:
    """Episodes whose entities JSON contains ``entity`` (``LIKE %e%``, escaped only with the Q22 fix), newest first."""
    test, pattern = like_test(entity, escape=not db.quirks.q22_like_unescaped) or ("{} LIKE ?", f"%{entity}%")
    sql = f"SELECT * FROM episodes WHERE {test.format('entities')} ORDER BY started_at DESC LIMIT ?"
    with db.guard("search episodes") as conn:
        return [_episode(r) for r in conn.execute(sql, (pattern, limit)).fetchall()]


def list_episodes(db: Database, session_id: str | None = None) -> list[dict[str, Any]]:
    """Every episode (optionally of one session), oldest first."""
    where, args = ("WHERE session_id=?", [session_id]) if session_id is not None else ("", [])
    with db.guard("list episodes") as conn:
        return [_episode(r) for r in conn.execute(f"SELECT * FROM episodes {where} ORDER BY started_at, rowid", args)]


# --------------------------------------------------------------------------------------------------------------- turns
def save_turn(db: Database, session_id: str, turn_index: int, role: str, content: str,
              tool_calls: Sequence[Mapping[str, Any]] = (), tool_results: Sequence[Mapping[str, Any]] = ()) -> None:
    """Store a turn: ``INSERT OR REPLACE`` at the seed (resets ``extracted``, Q5), an UPSERT keeping it when fixed."""
    values = (session_id, turn_index, role, content, _json(list(tool_calls)) if tool_calls else None,
              _json(list(tool_results)) if tool_results else None, bool(tool_calls), db.now(), len(content) // 4)
    cols = "session_id, turn_index, role, content, tool_calls, tool_results, has_tool_calls, timestamp, token_estimate"
    if db.quirks.q5_insert_or_replace:
        sql = f"INSERT OR REPLACE INTO conversation_turns({cols}, extracted) VALUES (?,?,?,?,?,?,?,?,?, FALSE)"
    else:  # fix: spec §7 Q5
        sql = (f"INSERT INTO conversation_turns({cols}) VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(session_id, turn_index) "
               "DO UPDATE SET role=excluded.role, content=excluded.content, tool_calls=excluded.tool_calls, "
               "tool_results=excluded.tool_results, has_tool_calls=excluded.has_tool_calls")
    with db.guard("save turn") as conn:
        conn.execute(sql, values)
        conn.commit()


def next_turn_index(db: Database, session_id: str) -> int:
    """MAX(turn_index)+1 for the session, or 0."""
    with db.guard("read turns") as conn:
        row = conn.execute("SELECT MAX(turn_index) FROM conversation_turns WHERE session_id=?", (session_id,)).fetchone()
        if row[0] is not None and (type(row[0]) is not int or row[0] >= TURN_INDEX_MAX):  # fix (hostile probe, round 11)
            raise sqlite3.DatabaseError(f"damaged turn of session {session_id[:40]!r}: turn_index = {row[0]!r:.40}")
    return 0 if row[0] is None else row[0] + 1


def unextracted_turns(db: Database, limit: int = 200) -> list[dict[str, Any]]:
    """Turns with ``extracted = FALSE``, oldest first."""
    sql = "SELECT * FROM conversation_turns WHERE extracted = FALSE ORDER BY timestamp, id LIMIT ?"
    with db.guard("read turns") as conn:
        return [dict(r) for r in conn.execute(sql, (limit,)).fetchall()]


def mark_extracted(db: Database, session_id: str, indices: Sequence[object]) -> None:
    """Mark turn indices of a session extracted (each as stored: a damaged one, text or a blob, is matched as is)."""
    with db.guard("mark turns") as conn:
        conn.executemany("UPDATE conversation_turns SET extracted = TRUE WHERE session_id=? AND turn_index=?",
                         [(session_id, i) for i in indices])
        conn.commit()


def search_turns(db: Database, keyword: str, *, days_back: int = 7, session_id: str | None = None,
                 max_results: int = 10) -> list[dict[str, Any]]:
    """Trace search (spec §4.6 source 1): ``LIKE`` over content and tool JSON within ``days_back``, newest first."""
    if not 0 <= max_results < 2**63:  # fix: -1 was SQLite's "no limit" (every row); 2**63 raised OverflowError
        raise ValueError(f"search_traces max_results must be from 0 to 2**63 - 1, got {max_results!r}")
    found = like_test(keyword, escape=not db.quirks.q22_like_unescaped)
    if found is None:
        return []  # the seed's pattern over the LIKE limit: it swallows the error (spec §2), no rows
    test, pattern = found
    try:  # fix: a days_back past the calendar's range raised OverflowError: the window holds every turn, or none
        cutoff = iso(db.clock.now() - timedelta(days=days_back))
    except OverflowError:
        cutoff = "" if days_back > 0 else "\uffff"
    where = " OR ".join(test.format(col) for col in ("content", "tool_calls", "tool_results"))
    sql = (f"SELECT * FROM conversation_turns WHERE ({where}) "
           "AND timestamp >= ?" + (" AND session_id = ?" if session_id is not None else "") + " ORDER BY timestamp DESC LIMIT ?")
    args: list[Any] = [pattern, pattern, pattern, cutoff, *([session_id] if session_id is not None else []), max_results]
    with db.guard("search turns") as conn:
        rows = [dict(r) for r in conn.execute(sql, args).fetchall()]
    for row in rows:
        row["content"] = str(row["content"] or "")[:500]
    return rows


# --------------------------------------------------------------------------------------------------------------- queue
def enqueue(db: Database, session_id: str, turn_index: int, content: str) -> bool:
    """``INSERT OR IGNORE`` on (session_id, turn_index); True if a row was added."""
    with db.guard("enqueue extraction") as conn:
        cur = conn.execute("INSERT OR IGNORE INTO extraction_queue(session_id, turn_index, content, max_retries, created_at) "
                           "VALUES (?,?,?,?,?)", (session_id, turn_index, content, QUEUE_MAX_RETRIES, db.now()))
        conn.commit()
    return cur.rowcount > 0


def dequeue(db: Database, batch: int = 20) -> list[dict[str, Any]]:
    """Recover rows stuck in ``processing`` over 30 minutes, then claim up to ``batch`` pending rows."""
    now = db.clock.now()
    stuck_before = iso(now - STUCK_AFTER)
    with db.guard("dequeue extraction") as conn:
        conn.execute("UPDATE extraction_queue SET status='pending' WHERE status='processing' AND last_attempted_at < ?",
                     (stuck_before,))
        rows = [dict(r) for r in conn.execute(
            "SELECT * FROM extraction_queue WHERE status='pending' AND retry_count < max_retries ORDER BY created_at, id LIMIT ?",
            (batch,)).fetchall()]
        conn.executemany("UPDATE extraction_queue SET status='processing', retry_count=retry_count+1, last_attempted_at=? "
                         "WHERE id=?", [(iso(now), r["id"]) for r in rows])
        conn.commit()
    return rows


def complete(db: Database, queue_id: int, *, success: bool, retry: bool = False) -> None:
    """Mark a claimed row ``completed`` or ``failed`` (``retry``: back to ``pending``, the Q10 fix for model errors)."""
    status = "completed" if success else "pending" if retry else "failed"
    with db.guard("complete extraction") as conn:
        conn.execute("UPDATE extraction_queue SET status=? WHERE id=?", (status, queue_id))
        conn.commit()


def queue_rows(db: Database) -> list[dict[str, Any]]:
    """Every queue row, oldest first."""
    with db.guard("read queue") as conn:
        return [dict(r) for r in conn.execute("SELECT * FROM extraction_queue ORDER BY id").fetchall()]


def age_days(db: Database, stamp: str | None) -> float:
    """Days from ``stamp`` to now, floored at 0 (0 for a missing stamp)."""
    moment = parse_iso(stamp)
    if moment is None:
        return 0.0
    return max(0.0, (db.now_naive() - moment).total_seconds() / 86400)
