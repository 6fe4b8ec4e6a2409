"""A hostile SQLite memory database whose schema objects or values another program changed (hostile probe, round 10):
a foreign trigger, a dropped or altered FTS trigger, a number out of its column's range, a row without an id.

The promise (memory_core/sqlite/README.md, docs/limits.md): no row silently lost, no silently wrong answer, every
failure a ``SqliteMemoryError`` of one line naming the db file.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_core.clock import FixedClock
from memory_core.sqlite import SqliteMemory, SqliteMemoryError
from tests.hostile.test_sqlite_hostile_db import _base, _exercise
from tests.sqlite.conftest import T0, scratch

EXAMPLES = int(os.environ.get("MEMHARNESS_HOSTILE_DB_EXAMPLES", "60"))
OURS = ("memories_fts_ai", "memories_fts_ad", "memories_fts_au")
TABLES = ("memories", "episodes", "conversation_turns", "extraction_queue", "scratchpad", "_schema_meta")
BODIES = ("SELECT RAISE(IGNORE);", "SELECT RAISE(ABORT, 'no');", "DELETE FROM memories;",
          "UPDATE memories SET content = 'rewritten' WHERE rowid > 0;", "SELECT 1;",
          "INSERT OR IGNORE INTO _schema_meta(key, value) VALUES ('planted', 'x');")
STAMP = "2026-03-01T00:00:00"


def _snapshot(path: Path) -> tuple[list[tuple[str, str]], int, str]:
    with sqlite3.connect(path) as conn:
        schema = conn.execute("SELECT type, name FROM sqlite_master ORDER BY type, name").fetchall()
        rows = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        version = conn.execute("SELECT value FROM _schema_meta WHERE key='version'").fetchone()[0]
    conn.close()
    return schema, rows, version


@settings(max_examples=EXAMPLES, deadline=None)
@given(name=st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True).filter(lambda n: n not in OURS),
       timing=st.sampled_from(["BEFORE", "AFTER", ""]), event=st.sampled_from(["INSERT", "UPDATE", "DELETE",
                                                                                 "UPDATE OF content"]),
       table=st.sampled_from(TABLES), body=st.sampled_from(BODIES), when=st.booleans())
def test_a_foreign_trigger_on_the_ports_tables_is_refused_and_left_as_written(
        name: str, timing: str, event: str, table: str, body: str, when: bool) -> None:
    """Round 10 F3: ``BEFORE INSERT ON memories ... RAISE(IGNORE)`` was kept and obeyed: seed, extract and add_memory
    returned ids for rows never stored. Generated triggers (name, timing, event, table, body) on any table the port
    writes: opening refuses with the documented error naming the file and the trigger; the file is left as written."""
    main, _ = _base()
    with scratch() as tmp:
        path = tmp / "m.db"
        path.write_bytes(main)
        clause = " WHEN 1" if when else ""
        with sqlite3.connect(path) as conn:
            conn.execute(f"CREATE TRIGGER {name} {timing} {event} ON {table} FOR EACH ROW{clause} BEGIN {body} END")
        conn.close()
        before = _snapshot(path)
        with pytest.raises(SqliteMemoryError) as refused:
            SqliteMemory(path, FixedClock(T0)).close()
        message = str(refused.value)
        assert message.startswith(f"{path}: open failed: foreign trigger {name!r} on table {table}"), message
        assert "\n" not in message
        assert _snapshot(path) == before


def test_a_trigger_on_a_table_the_port_never_writes_is_left_alone() -> None:
    main, _ = _base()
    with scratch() as tmp:
        path = tmp / "m.db"
        path.write_bytes(main)
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE notes(x)")
            conn.execute("CREATE TRIGGER notes_wipe AFTER INSERT ON notes BEGIN DELETE FROM memories; END")
        conn.close()
        assert _exercise(path) == "ok"
        assert ("trigger", "notes_wipe") in _snapshot(path)[0]


def test_a_trigger_planted_while_open_cannot_make_a_write_vanish() -> None:
    """Opening checks the triggers; one another process adds later and that ignores the insert makes the write fail
    with the documented error, not return an id for a row never stored."""
    with scratch() as tmp:
        mem = SqliteMemory(tmp / "m.db", FixedClock(T0))
        with sqlite3.connect(tmp / "m.db") as conn:
            conn.execute("CREATE TRIGGER evil BEFORE INSERT ON memories BEGIN SELECT RAISE(IGNORE); END")
        conn.close()
        with pytest.raises(SqliteMemoryError, match="was not stored"):
            mem.add_memory("remember the staging db is postgres 16")
        with pytest.raises(SqliteMemoryError, match="was not stored"):
            mem.seed([{"content": "the deploy region is eu-west-3", "type": "project"}])
        assert mem.documents() == []
        mem.close()


@settings(max_examples=EXAMPLES, deadline=None)
@given(damage=st.dictionaries(st.sampled_from(OURS), st.sampled_from(["drop", "no-op", "other-table"]), min_size=1),
       planted=st.integers(0, 3), quirks=st.sampled_from(["fixed", "seed"]))
def test_a_dropped_or_altered_fts_trigger_is_recreated_and_the_index_rebuilt(
        damage: dict[str, str], planted: int, quirks: str) -> None:
    """Round 10 F4: a dropped ``memories_fts_ai`` was accepted on open and never rebuilt, so rows written afterwards
    were never indexed (bm25 recall []). Generated: which of the port's triggers are dropped or replaced (an empty
    body, or the name on another table), and how many rows another program inserts, updates or deletes meanwhile.
    After reopening the index is whole, and rows written before and after are all found."""
    from memory_core.sqlite import Quirks
    main, _ = _base()
    with scratch() as tmp:
        path = tmp / "m.db"
        path.write_bytes(main)
        with sqlite3.connect(path) as conn:
            for name, how in damage.items():
                conn.execute(f"DROP TRIGGER {name}")
                if how == "no-op":
                    conn.execute(f"CREATE TRIGGER {name} AFTER INSERT ON memories BEGIN SELECT 1; END")
                elif how == "other-table":
                    conn.execute(f"CREATE TRIGGER {name} AFTER INSERT ON episodes BEGIN SELECT 1; END")
            for i in range(planted):
                conn.execute("INSERT INTO memories(id, content, created_at, updated_at) VALUES (?, ?, ?, ?)",
                             (f"p{i}", f"planted zeppelin{i} hangar", STAMP, STAMP))
            conn.execute("UPDATE memories SET content = 'rewritten walrus colony' WHERE content LIKE 'fact 7 %'")
            conn.execute("DELETE FROM memories WHERE content LIKE 'fact 9 %'")
        conn.close()
        mem = SqliteMemory(path, FixedClock(T0), quirks=Quirks.parse(quirks))
        try:
            assert mem.fts_integrity() is None
            mem.seed([{"content": "the deploy region is eu-west-3", "type": "project"}])
            new = mem.add_memory("remember the staging database is postgres sixteen")
            assert mem.db.update_memory(new, {"content": "remember the staging database is mariadb eleven"})
            assert mem.fts_integrity() is None

            def found(query: str) -> list[str]:
                return [c.content for c in mem.recall(query, 5, "bm25").items]

            assert any("eu-west-3" in c for c in found("deploy region"))
            assert any("mariadb" in c for c in found("mariadb"))
            assert not found("postgres")
            assert any("walrus" in c for c in found("walrus colony"))
            for i in range(planted):
                assert any(f"zeppelin{i}" in c for c in found(f"zeppelin{i}"))
            have = {r[0]: r[1] for r in mem.db.conn.execute("SELECT name, tbl_name FROM sqlite_master WHERE type='trigger'")}
            assert have == dict.fromkeys(OURS, "memories")
        finally:
            mem.close()


_NUMBERS = {"memories": ("importance_score", "access_count", "confidence", "decay_rate"),
            "episodes": ("importance_score", "access_count")}
HOSTILE_NUMBERS = st.one_of(st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False),
                            st.sampled_from([-5, -1, 2, 2**63 - 1, -(2**63), float("inf"), float("-inf"), 1e308, -0.5, 7.5]))


@settings(max_examples=EXAMPLES, deadline=None)
@given(table=st.sampled_from(sorted(_NUMBERS)), data=st.data(), every=st.integers(1, 4))
def test_a_number_out_of_its_columns_range_reads_into_it(table: str, data: st.DataObject, every: int) -> None:
    """Round 10 F10: ``access_count = -5`` raised ``ValueError: math domain error`` from recall. Generated: any
    numbers (negative, above 1, ±inf, SQLite's integer limits) in generated number columns of every ``every``-th
    row: every operation works, and what is read is in the column's range (rows.py)."""
    columns = data.draw(st.sets(st.sampled_from(_NUMBERS[table]), min_size=1))
    values = {c: data.draw(HOSTILE_NUMBERS, label=c) for c in sorted(columns)}
    main, _ = _base()
    with scratch() as tmp:
        path = tmp / "m.db"
        path.write_bytes(main)
        with sqlite3.connect(path) as conn:
            conn.execute(f"UPDATE {table} SET {', '.join(f'{c} = ?' for c in values)} WHERE rowid % ? = 0",
                         [*values.values(), every])
        conn.close()
        assert _exercise(path) == "ok"
        mem = SqliteMemory(path, FixedClock(T0))
        try:
            for row in mem.db.load_all():
                assert 0 <= row["access_count"] <= 2**62
                assert isinstance(row["access_count"], int)
                assert all(0.0 <= row[c] <= 1.0 for c in ("importance_score", "confidence", "decay_rate"))
            for item in mem.recall("fact about gamma docker compose billing").items:
                assert 0.0 <= item.importance_score <= 1.0
                assert 0.0 <= item.access_frequency_score <= 1.0
        finally:
            mem.close()


@settings(max_examples=EXAMPLES, deadline=None)
@given(every=st.integers(1, 7), kind=st.sampled_from(["null", "blob"]), quirks=st.sampled_from(["fixed", "seed"]))
def test_a_row_without_an_id_gets_a_fresh_one_on_open(every: int, kind: str, quirks: str) -> None:
    """Round 10 F10: rows whose id is NULL read back as the id "None" (each of them); forget listed 'None' and removed
    nothing. Generated: NULL or blob ids in every ``every``-th row. Opening gives each a fresh id: every row is kept,
    ids are distinct text, and forget removes what it lists."""
    from memory_core.sqlite import Quirks
    main, _ = _base()
    with scratch() as tmp:
        path = tmp / "m.db"
        path.write_bytes(main)
        with sqlite3.connect(path) as conn:
            conn.execute(f"UPDATE memories SET id = {'NULL' if kind == 'null' else 'randomblob(4)'} "
                         "WHERE rowid % ? = 0", (every,))
            rows = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        conn.close()
        mem = SqliteMemory(path, FixedClock(T0), quirks=Quirks.parse(quirks))
        try:
            ids = [d.id for d in mem.documents()]
            assert len(ids) == rows == len(set(ids))
            assert all(isinstance(i, str) and i not in ("None", "") and not i.startswith("b'") for i in ids)
            result = mem.forget("alpha3 beta3")
            assert result.removed == result.candidates
            assert result.removed
            assert not set(result.removed) & {d.id for d in mem.documents()}
            assert mem.fts_integrity() is None
        finally:
            mem.close()
