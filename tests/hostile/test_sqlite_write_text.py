"""Any text on the SQLite system's write side (turns, seeds, the manual tool) is stored or refused by a documented
error, never an escaping ``UnicodeEncodeError`` (issue 33): a lone surrogate (what ``surrogateescape`` makes of
non-UTF-8 bytes) is stored as U+FFFD, and the memory is found by its other words. Generated (Hypothesis)."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_core.clock import FixedClock
from memory_core.sqlite import Quirks, SqliteMemory
from tests.helpers import examples
from tests.sqlite.conftest import scratch

SURROGATE_TEXT = st.lists(st.one_of(st.text(min_size=1, max_size=12), st.sampled_from(["\ud800", "\udcff", "\udfff"])),
                          min_size=1, max_size=8).map("".join)


@settings(max_examples=examples(60), deadline=None)
@given(SURROGATE_TEXT, st.sampled_from(["seed", "fixed"]))
def test_any_text_is_stored_and_found_by_its_words(noise: str, mode: str) -> None:
    with scratch() as root:
        memory = SqliteMemory(root / "m.db", FixedClock(datetime(2026, 3, 2, tzinfo=UTC)), None, Quirks.parse(mode), None)
        try:
            text = f"Deploys use zebrafinch compose {noise} on the staging box"
            memory.add_turns("s1", [{"role": "user", "content": text}])
            memory.extract("s1")
            memory.seed([{"content": f"zebrafinch seeds {noise}", "type": "user", "subject": noise, "predicate": noise}])
            memory.add_memory(f"zebrafinch manual {noise}", "fact", 0.7)
            stored = [str(r["content"]) for r in memory.db.load_all()]
            assert all(not any(0xD800 <= ord(c) <= 0xDFFF for c in s) for s in stored)
            assert any("zebrafinch seeds" in s for s in stored)
            assert memory.recall("zebrafinch", 5, "heuristic").items
        finally:
            memory.close()
