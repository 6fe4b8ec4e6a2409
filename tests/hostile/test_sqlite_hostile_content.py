"""A memory row whose ``content`` is no text (hostile probe, round 11; named and left open by round 10): NULL (in a
``memories`` table another program made without ``NOT NULL``), a number (an untyped column), or a blob.

Before: a NULL read as the text ``"None"`` and a blob as ``"b'...'"`` — listed by ``documents()`` under those names,
and ``add_memory("None")`` refused as a duplicate of the NULL row. Now a NULL reads as ``""``, a number as its text,
and a blob is a damaged row (``SqliteMemoryError`` naming the db file, as text in a number column is). Generated:
the stored value, which rows hold it, and the operations after it.
"""

from __future__ import annotations

import os
import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_core.clock import FixedClock
from memory_core.sqlite import SqliteMemory, SqliteMemoryError
from tests.hostile.harness import within
from tests.hostile.test_sqlite_hostile_db import _base, _documented, _exercise
from tests.sqlite.conftest import T0, scratch

EXAMPLES = int(os.environ.get("MEMHARNESS_HOSTILE_DB_EXAMPLES", "60"))
VALUES = st.one_of(st.none(), st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=False), st.binary(max_size=8),
                   st.sampled_from(["None", "b''"]))


def _as_text(value: object) -> str:
    """What a stored ``content`` reads as (None: ``""``; a number: its text, as SQLite's own CAST gives)."""
    return "" if value is None else str(value)


@settings(max_examples=EXAMPLES, deadline=None)
@given(value=VALUES, every=st.integers(1, 7), untyped=st.booleans())
def test_a_content_that_is_no_text_reads_as_text_or_is_the_documented_error(value: object, every: int,
                                                                            untyped: bool) -> None:
    main, _ = _base()
    with scratch() as tmp:
        path = tmp / "m.db"
        path.write_bytes(main)
        with sqlite3.connect(path) as conn:
            conn.execute("PRAGMA writable_schema=ON")  # another program's table: content nullable (and untyped)
            conn.execute("UPDATE sqlite_master SET sql = replace(sql, 'content TEXT NOT NULL', ?) WHERE name = "
                         "'memories'", ("content" if untyped else "content TEXT",))
        conn.close()
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE memories SET content = ? WHERE rowid % ? = 0", (value, every))
            stored = dict(conn.execute("SELECT id, content FROM memories"))
        conn.close()
        mem = SqliteMemory(path, FixedClock(T0))
        try:
            docs = within(mem.documents)
            assert not isinstance(value, bytes) or not any(isinstance(v, bytes) for v in stored.values()), \
                "a blob content was read"
            for doc in docs:
                assert doc.text == _as_text(stored[doc.id]), (doc.id, doc.text, stored[doc.id])
            if value is None and any(v is None for v in stored.values()):
                within(lambda: mem.add_memory("None", "fact", 0.9))
                assert any(d.text == "None" for d in mem.documents())  # no longer a duplicate of the NULL row
        except SqliteMemoryError as exc:
            refused = str(exc)
            _documented(exc, path)
            assert isinstance(value, bytes), refused  # only a blob is a damaged row
        finally:
            mem.close()
        _exercise(path)  # every operation works or is the documented error
