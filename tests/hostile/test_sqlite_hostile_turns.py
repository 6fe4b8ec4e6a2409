"""Hostile cells in the SQLite memory's ``conversation_turns`` table (hostile probe, round 11): a turn whose
``turn_index`` another program set to text, a blob, a float (``inf`` included) or SQLite's largest integer, or whose
``tool_calls`` JSON is no list.

Before: adding a turn to that session raised ``ValueError``/``OverflowError`` (``int(MAX(turn_index)) + 1``, or the
next index past SQLite's 64-bit integer), and ``dream`` raised ``ValueError``/``OverflowError`` (``int()`` of each
turn's index when marking turns extracted) or ``TypeError`` (``tool_calls`` stored as ``5``). Now every operation
works or raises ``SqliteMemoryError`` naming the db file on one line (the port's documented failure): marking turns
extracted matches each stored index as it is, a non-list ``tool_calls`` reads as no calls, and the next index of a
session whose last index is not a whole number below SQLite's maximum is a damaged row.
"""

from __future__ import annotations

import os
import sqlite3

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from memory_core.clock import FixedClock
from memory_core.sqlite import SqliteMemory, SqliteMemoryError
from tests.hostile.harness import within
from tests.hostile.test_sqlite_hostile_db import TURN, _base, _documented
from tests.sqlite.conftest import T0, scratch

EXAMPLES = int(os.environ.get("MEMHARNESS_HOSTILE_DB_EXAMPLES", "60"))
CELLS = st.one_of(st.none(), st.integers(-2**63, 2**63 - 1), st.just(2**63 - 1),
                  st.floats(allow_nan=False), st.just(float("inf")), st.just(float("-inf")),
                  st.text(max_size=8), st.binary(max_size=8), st.sampled_from(["5", "12", "-3", "{}", "null", "1e400"]))


def _operations(mem: SqliteMemory) -> None:
    within(lambda: mem.add_turns("s0", [{"role": "user", "content": "we moved the ledger to postgres 16"}]))
    within(lambda: mem.add_turns("s1", [{"role": "user", "content": TURN}]))
    within(lambda: mem.extract("s0"))
    within(lambda: mem.dream(force=True))
    within(lambda: mem.search_traces("docker"))
    within(lambda: mem.recall("docker compose staging"))
    within(lambda: mem.documents())


@settings(max_examples=EXAMPLES, deadline=None)
@given(column=st.sampled_from(["turn_index", "tool_calls", "tool_results"]), value=CELLS, every=st.integers(1, 3),
       unextracted=st.booleans())
def test_a_hostile_turn_cell_works_or_fails_with_the_documented_error(column: str, value: object, every: int,
                                                                      unextracted: bool) -> None:
    assume(column != "turn_index" or value is not None)  # NOT NULL: SQLite itself refuses it
    main, _ = _base()
    with scratch() as tmp:
        path = tmp / "m.db"
        path.write_bytes(main)
        with sqlite3.connect(path) as conn:
            if unextracted:  # dream reads (and marks) only turns not yet extracted
                conn.execute("UPDATE conversation_turns SET extracted = FALSE")
            where = ("rowid = (SELECT max(rowid) FROM conversation_turns WHERE session_id = 's0') AND ? > 0"
                     if column == "turn_index" else "rowid % ? = 0")  # one index a session: UNIQUE(session, index)
            conn.execute(f"UPDATE OR REPLACE conversation_turns SET {column} = ? WHERE {where}", (value, every))
        conn.close()
        mem = SqliteMemory(path, FixedClock(T0))
        try:
            _operations(mem)
        except SqliteMemoryError as exc:
            _documented(exc, path)
        finally:
            mem.close()
