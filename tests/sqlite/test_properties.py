"""Hypothesis properties of the SQLite memory, both modes (bounded: each example opens a fresh database)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_core.clock import FixedClock
from memory_core.sqlite import Quirks, SqliteMemory
from tests.sqlite.conftest import T0, scratch

modes = st.sampled_from(["seed", "fixed"])
texts = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=80)
words = st.text("abcdefghijklmnopqrstuvwxyz", min_size=3, max_size=10)
punct = st.text("?!.,;:'\"-+*()[]{}^~\\/%_@#& ", max_size=4)
bounded = settings(max_examples=10, deadline=None)


def _open(tmp: Path, mode: str) -> SqliteMemory:
    return SqliteMemory(tmp / "p.db", FixedClock(T0), quirks=Quirks.parse(mode))


@bounded
@given(modes, st.lists(texts, min_size=1, max_size=6), texts)
def test_any_content_and_query_never_raise_and_never_lose_rows(mode: str, contents: list[str], query: str) -> None:
    with scratch() as tmp:
        mem = _open(tmp, mode)
        stored = [c for c in contents if c.strip()]
        mem.seed([{"content": c, "importance": 0.7} for c in stored])
        for path in ("candidates", "typed", "cascade"):
            result = mem.recall(query, 10, path=path)
            assert [c.score for c in result.items] == sorted((c.score for c in result.items), reverse=True)
            assert all(0.0 <= c.score <= 1.0 for c in result.items)
        assert len(mem.documents()) == len(stored)
        mem.close()


@bounded
@given(words, punct, punct, st.lists(words, max_size=4))
def test_fixed_mode_finds_a_word_whatever_the_punctuation(word: str, before: str, after: str, others: list[str]) -> None:
    with scratch() as tmp:
        mem = _open(tmp, "fixed")
        (mid,) = mem.seed([{"content": f"note about {word} here"}])
        mem.seed([{"content": f"other {o}"} for o in others if word not in o])
        hits = [c.memory_id for c in mem.recall(f"{before}{word}{after}", 10, path="typed").items]
        assert mid in hits
        mem.close()


@bounded
@given(modes, st.lists(st.tuples(st.sampled_from(["a1", "a2", "a3"]), words), min_size=1, max_size=8))
def test_rewrites_keep_the_fts_index_in_sync_when_fixed(mode: str, writes: list[tuple[str, str]]) -> None:
    with scratch() as tmp:
        mem = _open(tmp, mode)
        for memory_id, word in writes:
            mem.seed([{"id": memory_id, "content": f"value {word}"}])
        rewrote = len(writes) > len({i for i, _ in writes})
        assert (mem.fts_integrity() is None) == (mode == "fixed" or not rewrote)
        assert len(mem.documents()) == len({i for i, _ in writes})
        mem.close()


@bounded
@given(modes, st.lists(st.lists(words, min_size=1, max_size=5), min_size=1, max_size=6))
def test_dream_never_empties_a_cluster_and_converges(mode: str, contents: list[list[str]]) -> None:
    """Clustering compares only against a cluster's first member (not transitive, spec §5.3), so a second dream may
    still merge; but every dream keeps one member per cluster and repeated dreams reach a fixed point."""
    with scratch() as tmp:
        mem = _open(tmp, mode)
        mem.seed([{"content": " ".join(c), "importance": 0.6} for c in contents])
        sizes = [len(mem.documents())]
        for _ in range(len(contents)):
            removed = mem.dream().counts["duplicates_removed"]
            sizes.append(len(mem.documents()))
            assert sizes[-1] == sizes[-2] - removed
            assert sizes[-1] >= 1
        assert mem.dream().counts["duplicates_removed"] == 0
        mem.close()
