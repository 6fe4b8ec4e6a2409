"""Round 16a: the manual tool ``add_memory`` (spec §3.6) with hostile arguments from its caller (a model's tool call):
a content or type that is no string, an importance that is no number, NaN or past a float's range. Each is a
``ValueError`` naming the argument and stores nothing; before, NaN was stored as NULL (read back as 0.5), ``10**400``
raised ``OverflowError`` from sqlite3 and a ``None`` content or type ``AttributeError``. Valid calls store one row
with the §3.6 priority (blank content too: §3.6 refuses nothing, scenario life-gen15-dedupe-blank-content-skipped).
Generated."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_core.clock import FixedClock
from memory_core.sqlite import Quirks, SqliteMemory
from tests.helpers import examples
from tests.sqlite.conftest import T0, scratch

BLANK = st.text(" \t\r\n\u3000\u00a0\u2003\x0b\x0c", max_size=6)
CONTENT = st.one_of(BLANK, st.text(min_size=1, max_size=40), st.none(), st.integers(), st.lists(st.text(), max_size=2))
KIND = st.one_of(st.sampled_from(["fact", "RULE", "Preference", "skill", "error", "weird", ""]), st.none(), st.integers(),
                 st.booleans())
IMPORTANCE = st.one_of(st.floats(), st.integers(-(10**400), 10**400), st.booleans(), st.none(),
                       st.sampled_from(["0.9", "high"]), st.just(10**400))


def _valid(content: Any, kind: Any, importance: Any) -> bool:
    if not isinstance(content, str) or not isinstance(kind, str):
        return False
    if isinstance(importance, bool) or not isinstance(importance, int | float):
        return False
    try:
        return not math.isnan(float(importance))
    except OverflowError:
        return False


@settings(max_examples=examples(150), deadline=None)
@given(content=CONTENT, kind=KIND, importance=IMPORTANCE, mode=st.sampled_from(["seed", "fixed"]))
def test_add_memory_stores_a_valid_call_and_refuses_the_rest_by_name(content: Any, kind: Any, importance: Any,
                                                                     mode: str) -> None:
    with scratch() as root:
        memory = SqliteMemory(root / "m.db", FixedClock(T0), quirks=Quirks.parse(mode))
        try:
            if not _valid(content, kind, importance):
                with pytest.raises(ValueError, match="add_memory"):
                    memory.add_memory(content, kind, importance)
                assert memory.db.load_all() == []
                return
            memory_id = memory.add_memory(content, kind, importance)
            (row,) = memory.db.load_all()
            assert row["id"] == memory_id
            assert row["content"] == row["content"].strip()
            value = float(importance)
            assert row["priority"] == ("permanent" if value >= 0.8 else "long_term" if value >= 0.6 else "short_term")
        finally:
            memory.close()
