"""FTS5 query syntax arriving from user or model text (issue 33), against the SQLite memory.

Extends tests/sqlite/test_properties.py (arbitrary text without surrogates; one word with punctuation around it):
here the queries are generated from FTS5's own operators (quotes, ``NEAR``, ``*``, ``-``, ``^``, ``+``, column
filters, ``{col col}:``, parentheses, ``AND``/``OR``/``NOT``), lone surrogates and very long runs.
- recall (every path and strategy), forget and the trace search never raise, in both modes, within 2 s of CPU;
- fixed mode: a memory's own words plus operator noise still find it, and noise without letters or digits changes
  nothing forget selects (the operators never change what is matched beyond the text's words).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from memory_core.clock import FixedClock
from memory_core.sqlite import Quirks, SqliteMemory
from tests.hostile.harness import within
from tests.sqlite.conftest import T0, scratch_dir

SYMBOLS = ['"', "*", "-", "^", "+", "(", ")", ":", "'", "{", "}", ",", "/", "\\", "%", "_", "~", "[", "]", "\0"]
WORDY = ["AND", "OR", "NOT", "NEAR", "NEAR(", "NEAR/2", "content:", "subject:", "tags:", "{content subject}:",
         "- content:", "rank:", "memories_fts:"]
words = st.text("abcdefghijklmnopqrstuvwxyz", min_size=3, max_size=10)
symbol_noise = st.lists(st.sampled_from(SYMBOLS), min_size=1, max_size=4).map("".join)
surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
noise = st.one_of(symbol_noise, st.sampled_from(WORDY), surrogates,
                  st.builds(lambda c, n: c * n, st.sampled_from(["x", "ab ", '"', "(", "a*"]), st.integers(1, 20_000)))
bounded = settings(max_examples=int(os.environ.get("MEMHARNESS_FTS_EXAMPLES", "40")), deadline=None)


@contextmanager
def _memory(mode: str) -> Iterator[SqliteMemory]:
    path = scratch_dir()
    mem = SqliteMemory(Path(path) / "m.db", FixedClock(T0), quirks=Quirks.parse(mode))
    try:
        yield mem
    finally:
        mem.close()
        shutil.rmtree(path, ignore_errors=True)


def _interleave(parts: list[str], extra: list[str], draw: st.DrawFn) -> str:
    out = list(parts)
    for piece in extra:
        out.insert(draw(st.integers(0, len(out))), piece)
    return draw(st.sampled_from([" ", "  ", "\t"])).join(out)  # glued to a word: tests/sqlite/test_properties.py


@st.composite
def hostile_queries(draw: st.DrawFn) -> str:
    return _interleave(draw(st.lists(words, max_size=3)), draw(st.lists(noise, min_size=1, max_size=6)), draw)


@bounded
@given(mode=st.sampled_from(["seed", "fixed"]), query=hostile_queries())
def test_operator_text_never_raises(mode: str, query: str) -> None:
    with _memory(mode) as mem:
        mem.seed([{"content": f"note {i} about alpha beta {w}"} for i, w in enumerate(["gamma", "delta", "near"])])
        mem.add_turns("s", [{"role": "user", "content": "I always keep alpha beta notes in the wiki"}])
        for path in ("candidates", "typed", "cascade"):
            within(lambda path=path: mem.recall(query, 10, path=path))  # type: ignore[misc]
        within(lambda: mem.recall(query, 10, strategy="bm25"))
        within(lambda: mem.forget(query, dry_run=True))
        if query.strip():
            within(lambda: mem.search_traces(query))
        before = len(mem.documents())
        gone = within(lambda: mem.forget(query))
        assert len(mem.documents()) == before - len(gone.removed)
        assert mem.fts_integrity() is None


@bounded
@given(own=st.lists(words, min_size=1, max_size=3, unique=True), others=st.lists(words, max_size=4), data=st.data())
def test_a_memorys_words_with_operator_noise_still_find_it(own: list[str], others: list[str],
                                                           data: st.DataObject) -> None:
    from memory_core.sqlite.memory import FORGET_WORDS
    from memory_core.sqlite.retrieval import decompose_rules

    # 'forget memory' names no memory: forget needs a keyword that is neither a stop word nor a forget word
    assume(set(decompose_rules(" ".join(own)).keywords) - FORGET_WORDS)
    with _memory("fixed") as mem:
        (mid,) = mem.seed([{"content": "stored " + " ".join(own)}])
        mem.seed([{"content": f"other {o} row"} for o in others if o not in own and o != "stored"])
        symbols = data.draw(st.lists(st.one_of(symbol_noise, surrogates), min_size=1, max_size=5), label="symbols")
        wordy = data.draw(st.lists(st.sampled_from(WORDY), max_size=2), label="wordy")
        plain = " ".join(own)
        quiet = _interleave(own, symbols, data.draw)  # letters and digits: only the memory's own words
        loud = _interleave(own, symbols + wordy, data.draw)
        for query in (quiet, loud):
            for path in ("candidates", "typed", "cascade"):
                assert mid in [c.memory_id for c in mem.recall(query, 20, path=path).items], (path, query)
            assert mid in [c.memory_id for c in mem.recall(query, 20, strategy="bm25").items], query
        expected = mem.forget(plain, dry_run=True).candidates
        assert mid in expected
        assert mem.forget(quiet, dry_run=True).candidates == expected, quiet


@given(st.integers(49_990, 50_010), st.sampled_from(["a", "é", "%", "_"]))
@settings(max_examples=25, deadline=None)
def test_every_like_search_takes_a_keyword_at_and_past_sqlites_like_limit(size: int, char: str) -> None:
    """The three LIKE searches (memories' fallback, conversation traces, episode entities) take a keyword whose
    pattern is just under, at or over SQLite's 50,000-byte LIKE limit: no "pattern too complex" escapes, and each
    still finds the text that holds the keyword and nothing else (with the Q22 fix: % and _ are literal)."""
    from memory_core.sqlite.tables import save_episode, search_episodes, search_turns

    keyword = char * (size // len(char.encode()))
    with _memory("fixed") as mem:
        mem.seed([{"content": f"x {keyword} y"}, {"content": "unrelated text"}])
        mem.add_turns("s1", [{"role": "user", "content": f"said {keyword} once"}])
        save_episode(mem.db, {"session_id": "s1", "summary": "s", "started_at": "2026-04-01T08:00:00",
                              "ended_at": "2026-04-01T08:00:00", "entities": [keyword]})
        assert [r["content"] for r in mem.db.search_like([keyword], 10, escape=True)] == [f"x {keyword} y"]
        assert [r["content"] for r in search_turns(mem.db, keyword)] == [f"said {keyword} once"[:500]]
        assert len(search_episodes(mem.db, keyword)) == 1
        assert search_episodes(mem.db, keyword + "z") == []


@bounded
@given(word=words, hosts=st.lists(st.tuples(words, words), min_size=1, max_size=6), data=st.data())
def test_forget_and_recall_never_match_inside_another_word(word: str, hosts: list[tuple[str, str]],
                                                           data: st.DataObject) -> None:
    """The trigram index (spec §7 Q3's fix) matches substrings: 'cat' inside 'communicated'. Generated memories hold
    the query word inside longer words (before, after, around it) and some hold it whole, maybe inflected: forget
    removes exactly the whole-word ones and recall's semantic path selects no other (no lost rows)."""
    from memory_core.sqlite.fts import stems
    from memory_core.sqlite.memory import FORGET_WORDS
    from memory_core.sqlite.retrieval import decompose_rules

    assume(word not in ("note", "end") and word not in FORGET_WORDS and tuple(decompose_rules(word).keywords) == (word,))
    with _memory("fixed") as mem:
        rows = []
        for head, tail in hosts:
            embedded = data.draw(st.sampled_from([head + word, word + tail, head + word + tail]), label="embedded")
            rows.append(embedded)
            if data.draw(st.booleans(), label="whole"):
                rows.append(data.draw(st.sampled_from([word, word + "s", word + "ing"]), label="inflected"))
        ids = mem.seed([{"content": f"note {text} end"} for text in rows])
        whole = {i for i, text in zip(ids, rows, strict=True) if stems(word) & stems(text)}
        hits = {c.memory_id for c in mem.recall(word, 50, path="candidates").items}
        assert hits <= whole, (word, rows)
        assert set(mem.forget(f"forget {word}").removed) == whole, (word, rows)


@pytest.mark.parametrize(("query", "text", "found"), [
    ("like", "The user liked jazz", True), ("like", "likes tea", True), ("make", "it makes sense", True),
    ("run", "enjoys running marathons", True), ("stop", "stopped smoking", True), ("use", "used vim", True),
    ("cat", "a category label", False), ("cat", "notes are communicated", False), ("cat", "two cats", True),
])
def test_whole_words_up_to_an_inflection(query: str, text: str, found: bool) -> None:
    """The whole-word filter takes a word and its inflections ('liked', 'running', 'used' for 'like', 'run',
    'use': c513dce's substring matching found them, the first filter lost them) but never another word. The query
    word itself must occur (the trigram MATCH comes first), so 'like' finds 'liked' but not 'liking'."""
    from memory_core.sqlite.fts import search_semantic

    with _memory("fixed") as mem:
        (mid,) = mem.seed([{"content": text}])
        assert (mid in [h.row["id"] for h in search_semantic(mem.db, query, 10)]) is found


def test_whole_word_hits_crowded_out_by_inside_word_ones_are_still_found() -> None:
    """300 rows hold 'cat' only inside 'communicated', ranked first by bm25: the search asks SQLite for more rows
    until it has enough whole-word hits, so the one real 'cat' is found by recall and forget alike."""
    with _memory("fixed") as mem:
        mem.seed([{"content": " ".join(["communicated"] * 20) + f" {i}"} for i in range(300)])
        (mid,) = mem.seed([{"content": "a cat sat on the long mat " + " ".join(f"filler{i}" for i in range(60))}])
        assert mid in {c.memory_id for c in mem.recall("cat", 10, path="candidates").items}
        assert mem.forget("forget cat").removed == (mid,)


MARKS = st.sampled_from(["\u201c", "\u201d", "\uff02", "\u200d", "\u200b", "\u00ab", "\u00bb", "\u2039", "\u00bf",
                         "\u00a1", "\u00b7", "\u2026", "\u3001", "\uff0c", "\u2014", "\u00a7", "%", '"', ":"])


@bounded
@given(own=st.lists(words, min_size=1, max_size=3, unique=True), data=st.data())
def test_a_mark_glued_to_a_stop_word_changes_nothing_forget_selects(own: list[str], data: st.DataObject) -> None:
    """Hostile probe, round 8: 'AND“:deploy' selected nothing where 'AND deploy' selected the memory: the stop
    word with a mark glued to it was kept as a term every match had to hold."""
    from memory_core.sqlite.memory import FORGET_WORDS
    from memory_core.sqlite.retrieval import STOP_WORDS, decompose_rules

    assume(set(decompose_rules(" ".join(own)).keywords) - FORGET_WORDS)
    stops = data.draw(st.lists(st.sampled_from(sorted({"and", "AND", "or", "OR", "not", "NOT", "the", "with"}
                                                      & {w for w in STOP_WORDS} | {"AND", "OR", "NOT"})),
                               min_size=1, max_size=3), label="stops")
    glued = [data.draw(st.sampled_from(["{m}{w}", "{w}{m}", "{m}{w}{m}"])).format(m=data.draw(MARKS), w=w)
             for w in stops]
    with _memory("fixed") as mem:
        (mid,) = mem.seed([{"content": "stored " + " ".join(own)}])
        mem.seed([{"content": "an unrelated row and another"}])
        plain = mem.forget(" ".join([*stops, *own]), dry_run=True).candidates
        assert mid in plain
        query = _interleave(own, glued, data.draw)
        assert mem.forget(query, dry_run=True).candidates == plain, query
