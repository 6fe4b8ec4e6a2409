from __future__ import annotations

import pytest

from memory_core.clock import FixedClock
from memory_core.events import ForgetEvent, ListSink
from memory_core.files.forget import forget, forget_candidates, select_forget_heuristic
from memory_core.files.scan import scan
from memory_core.files.store import META_KEY, InMemoryStore, Store
from memory_core.model import ScriptedModel
from tests.helpers import put_doc


@pytest.fixture
def seeded(clock: FixedClock) -> InMemoryStore:
    store = InMemoryStore(clock)
    put_doc(store, "feedback/terse.md", "feedback", "Keep replies terse\n\nWhy: reads diffs", mtime_ms=3)
    put_doc(store, "user/multi.md", "user", "Likes Go\n\nUses vim\n\nLikes Go", mtime_ms=2)
    put_doc(store, "project/freeze.md", "project", "Release freeze Friday", mtime_ms=1)
    return store


def test_candidate_ids(seeded: Store) -> None:
    ids = [c.id for c in forget_candidates(scan(seeded).docs)]
    assert ids == ["feedback/terse.md", "user/multi.md:0", "user/multi.md:1", "user/multi.md:2", "project/freeze.md"]


def test_heuristic_substring_over_search_text(seeded: Store) -> None:
    cands = forget_candidates(scan(seeded).docs)
    assert [c.id for c in select_forget_heuristic("READS   diffs", cands, limit=5)] == ["feedback/terse.md"]
    assert select_forget_heuristic("   ", cands, limit=5) == []
    assert len(select_forget_heuristic("e", cands, limit=2)) == 2


def test_single_entry_file_is_unlinked_and_index_rebuilt(seeded: Store, clock: FixedClock) -> None:
    sink = ListSink()
    out = forget(seeded, "keep replies terse", now=clock.now(), events=sink)
    assert [c.id for c in out.removed] == ["feedback/terse.md"]
    assert seeded.stat("feedback/terse.md") is None
    assert "feedback/terse.md" not in seeded.read("MEMORY.md")
    assert out.system_message == "Managed auto-memory forgot 1 entry from: feedback/"
    [event] = sink.events
    assert isinstance(event, ForgetEvent)
    assert (event.removed_entries, event.candidates, event.strategy) == (1, 5, "heuristic")


def test_one_entry_of_multi_entry_file_and_same_summary_siblings(seeded: Store, clock: FixedClock) -> None:
    out = forget(seeded, "likes go", now=clock.now())
    assert [c.id for c in out.removed] == ["user/multi.md:0", "user/multi.md:2"]
    assert seeded.read("user/multi.md").endswith("---\n\nUses vim\n")
    assert out.touched_topics == ("user",)


def test_same_summary_sibling_goes_even_when_only_one_id_matched(seeded: Store, clock: FixedClock) -> None:
    model = ScriptedModel.of([{"selectedCandidateIds": ["user/multi.md:0"]}])
    out = forget(seeded, "forget go", now=clock.now(), model=model)
    assert [c.id for c in out.removed] == ["user/multi.md:0"]
    assert "Likes Go" not in seeded.read("user/multi.md")  # parity: removal is by summary equality


def test_no_match_writes_nothing(clock: FixedClock) -> None:
    store = InMemoryStore(clock)
    put_doc(store, "user/a.md", "user", "fact one")
    out = forget(store, "nothing like it", now=clock.now())
    assert (out.removed, out.strategy, out.system_message) == ((), "none", None)
    assert store.stat(META_KEY) is None  # no scaffold on empty matches (review fix 9)


def test_model_selection_in_candidate_order_and_limit(seeded: Store, clock: FixedClock) -> None:
    model = ScriptedModel.of([{"selectedCandidateIds": ["project/freeze.md", "feedback/terse.md"], "reasoning": "r"}])
    out = forget(seeded, "forget the freeze", now=clock.now(), model=model, limit=1)
    assert [c.id for c in out.removed] == ["feedback/terse.md"]  # candidate order, then cut
    assert (out.strategy, out.reasoning) == ("model", "r")
    [request] = model.calls
    assert request.purpose == "auto-memory-forget-selection"
    assert request.timeout_s == 8.0
    assert len(request.messages) == 1
    text = request.messages[0].content
    assert "Return at most 1 candidate ids." in text
    assert "Candidate 1\nid: feedback/terse.md\ntopic: feedback\nsummary: Keep replies terse\nwhy: reads diffs\n" in text
    assert "howToApply: (none)\nCandidate 2\n" in text


def test_the_default_limit_is_javascripts_max_safe_integer(seeded: Store, clock: FixedClock) -> None:
    model = ScriptedModel.of([{"selectedCandidateIds": []}])
    forget(seeded, "forget the freeze", now=clock.now(), model=model)
    # spec §8.4: limit = Number.MAX_SAFE_INTEGER, and the selector's prompt states the limit
    assert "Return at most 9007199254740991 candidate ids." in model.calls[0].messages[0].content


def test_model_unknown_id_falls_back(seeded: Store, clock: FixedClock) -> None:
    model = ScriptedModel.of([{"selectedCandidateIds": ["ghost.md"]}])
    out = forget(seeded, "release freeze", now=clock.now(), model=model)
    assert (out.strategy, out.fallback_reason) == ("heuristic", "unknown_id")
    assert [c.id for c in out.removed] == ["project/freeze.md"]


def test_model_empty_is_none_without_fallback(seeded: Store, clock: FixedClock) -> None:
    out = forget(seeded, "release freeze", now=clock.now(), model=ScriptedModel.of([{"selectedCandidateIds": []}]))
    assert (out.strategy, out.removed) == ("none", ())
    assert seeded.stat("project/freeze.md") is not None


def test_non_doc_file_matched_is_unlinked(clock: FixedClock) -> None:
    store = InMemoryStore(clock)
    put_doc(store, "user/a.md", "user", "fact to drop")
    cands = forget_candidates(scan(store).docs)
    store.write("user/a.md", "frontmatter gone")
    from memory_core.files.forget import delete_matches

    removed, touched = delete_matches(store, cands, now=clock.now())
    assert len(removed) == 1
    assert touched == ["user"]
    assert store.stat("user/a.md") is None
