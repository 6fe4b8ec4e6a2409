"""Round 16a: a memory of megabytes (unusual but valid: the spec sets no cap on ``content``) is found by a search for
one of its words within the hostile suite's CPU bound. The whole-word check on the trigram index's hits stemmed
every word of the row (10 MB of content: ~7 s of CPU a recall, most of it there); only the distinct words that can
share a stem with a query word are stemmed now. Generated: the row's vocabulary and the word searched."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_core.clock import FixedClock
from memory_core.sqlite import Quirks, SqliteMemory
from memory_core.sqlite.fts import search_semantic
from tests.hostile.harness import within
from tests.sqlite.conftest import T0, scratch

WORDS = st.text("abcdefghijklmnopqrstuvwxyz", min_size=4, max_size=9)
WORDS_IN_ROW = 1_000_000


@settings(max_examples=4, deadline=None)
@given(vocabulary=st.lists(WORDS, min_size=1, max_size=6, unique=True), at=st.integers(0, 5))
def test_a_memory_of_megabytes_is_searched_within_the_bound(vocabulary: list[str], at: int) -> None:
    words = (vocabulary * (WORDS_IN_ROW // len(vocabulary) + 1))[:WORDS_IN_ROW]
    with scratch() as root:
        memory = SqliteMemory(root / "m.db", FixedClock(T0), quirks=Quirks.fixed())
        try:
            (big,) = memory.seed([{"content": " ".join(words), "importance": 0.7}])
            memory.seed([{"content": "a short note", "importance": 0.7}])
            query = vocabulary[at % len(vocabulary)]
            hits = within(lambda: search_semantic(memory.db, query, 10))
            assert [h.row["id"] for h in hits] == [big]
        finally:
            memory.close()
