"""Round 16a: fixture records given to ``SqliteMemory.seed`` (Python API) with a lone surrogate in ``priority``,
``source`` or ``id`` are stored with U+FFFD in its place and read back (before: UnicodeEncodeError from sqlite3); an
``importance`` past a float's range is the documented ``ValueError`` (before: OverflowError). Generated."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_core.clock import FixedClock
from memory_core.sqlite import Quirks, SqliteMemory
from tests.helpers import examples
from tests.sqlite.conftest import T0, scratch

SURROGATE = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
TEXT = st.lists(st.one_of(SURROGATE, st.characters(codec="utf-8", exclude_categories=("Cc",))), min_size=1,
                max_size=6).map("".join)


def _clean(text: str) -> str:
    return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


@settings(max_examples=examples(60), deadline=None)
@given(field=st.sampled_from(["priority", "source", "id"]), value=TEXT, huge=st.integers(2**1024, 2**1100),
       mode=st.sampled_from(["seed", "fixed"]))
def test_seed_stores_a_surrogate_as_the_replacement_and_refuses_a_huge_importance(field: str, value: str, huge: int,
                                                                                  mode: str) -> None:
    with scratch() as root:
        memory = SqliteMemory(root / "m.db", FixedClock(T0), None, Quirks.parse(mode))
        try:
            with pytest.raises(ValueError, match="importance must be a number"):
                memory.seed([{"content": "billing runs on docker", "importance": huge}])
            (memory_id,) = memory.seed([{"content": "billing runs on docker", "importance": 0.7, field: value}])
            (row,) = memory.db.load_all()
            assert row["id"] == memory_id
            assert row[field] == _clean(value)
        finally:
            memory.close()
