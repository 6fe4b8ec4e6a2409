"""§7 quirks of extraction and recall, each both ways: Q9 (three switches), Q12, Q13, Q14, Q21, Q26."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from memory_core.clock import FixedClock
from memory_core.model import ScriptedModel
from memory_core.sqlite import Quirks
from memory_core.sqlite.extraction import parse_items
from memory_core.sqlite.retrieval import episode_entities
from memory_core.sqlite.stamps import iso
from memory_core.sqlite.tables import queue_rows, save_episode
from tests.sqlite.conftest import T0, Factory, row

LONG_TURN = "I always write my backend services in Go and deploy them with Docker compose."


def _item(content: str, importance: object = 0.8) -> dict[str, object]:
    return {"type": "FACT", "subject": "user", "predicate": "stack", "content": content, "importance": importance,
            "duration": "permanent"}


@pytest.mark.parametrize("q9", [True, False])
def test_q9_none_substring_rejects_valid_arrays(make: Factory, q9: bool) -> None:
    reply = {"items": [_item("User hit a NoneType error in the parser and fixed it")]}
    mem = make(Quirks.fixed().but(q9_none_substring=q9), model=ScriptedModel.of([reply, {"summary": "s"}]))
    mem.add_turns("s", [{"role": "user", "content": LONG_TURN}])
    result = mem.extract("s")
    assert result.inserted == (0 if q9 else 1)
    assert result.strategy == "model"
    assert result.fallback_reason is None


def test_q9_bare_none_is_nothing_in_both_modes() -> None:
    for flag in (True, False):
        assert parse_items("NONE", None, none_substring=flag, bad_item_drops_batch=flag) == []
        assert parse_items("  none \n", None, none_substring=flag, bad_item_drops_batch=flag) == []


@pytest.mark.parametrize("q9", [True, False])
def test_q9_one_bad_item_drops_the_batch(q9: bool) -> None:
    text = json.dumps({"items": [_item("User deploys with Docker compose"), _item("User writes Go services", "high"),
                                 _item("User uses PostgreSQL 16", [1])]})
    items = parse_items(text, json.loads(text), none_substring=False, bad_item_drops_batch=q9)
    assert [i.content for i in items] == ([] if q9 else ["User deploys with Docker compose"])


@pytest.mark.parametrize("q9", [True, False])
def test_q9_failed_extraction_is_not_enqueued(make: Factory, q9: bool) -> None:
    model = ScriptedModel.of([TimeoutError("model timed out"), {"summary": "talked about Go"}])
    mem = make(Quirks.fixed().but(q9_failure_not_enqueued=q9), model=model)
    mem.add_turns("s", [{"role": "user", "content": LONG_TURN}])
    result = mem.extract("s")
    assert result.fallback_reason == "provider"
    assert result.strategy == "heuristic"
    assert result.inserted >= 1  # the legacy keyword extractor ran instead ("always ")
    assert (result.enqueued, len(queue_rows(mem.db))) == ((0, 0) if q9 else (1, 1))


@pytest.mark.parametrize("q12", [True, False])
def test_q12_session_per_exchange_resets_the_cap(make: Factory, q12: bool) -> None:
    mem = make(Quirks.fixed().but(q12_session_per_exchange=q12))
    turns = []
    for i in range(7):
        turns += [{"role": "user", "content": f"Exchange {i}: I prefer option {i} for all of my projects, always."},
                  {"role": "assistant", "content": "ok"}]
    mem.add_turns("s", turns)
    result = mem.extract("s")
    assert result.attempts == (7 if q12 else 5)
    assert len(result.episodes) == (7 if q12 else 1)


@pytest.mark.parametrize("q13", [True, False])
def test_q13_recall_never_counts_access(make: Factory, q13: bool) -> None:
    mem = make(Quirks.fixed().but(q13_access_tracking_dead=q13))
    (mid,) = mem.seed([{"content": "User prefers the fish shell", "importance": 0.7}])
    mem.recall("fish shell", 5)
    data = row(mem, mid)
    assert data is not None
    assert (data["access_count"], data["last_accessed_at"]) == ((0, None) if q13 else (1, iso(T0)))


@pytest.mark.parametrize("q14", [True, False])
def test_q14_access_bookkeeping_refreshes_updated_at(make: Factory, clock: FixedClock, q14: bool) -> None:
    mem = make(Quirks.fixed().but(q14_updated_at_any_write=q14))
    (mid,) = mem.seed([{"content": "User prefers the fish shell", "importance": 0.7}])
    clock.advance(timedelta(days=3))
    mem.recall("fish shell", 5)
    data = row(mem, mid)
    assert data is not None
    assert data["access_count"] == 1
    assert data["updated_at"] == (iso(T0 + timedelta(days=3)) if q14 else iso(T0))


@pytest.mark.parametrize("q21", [True, False])
def test_q21_decompose_cache_ignores_context(make: Factory, q21: bool) -> None:
    replies = [{"keywords": ["shell"], "intent": "general"}, {"keywords": ["editor"], "intent": "general"}]
    model = ScriptedModel.of(replies)
    mem = make(Quirks.fixed().but(q21_decompose_cache_ignores_context=q21), model=model)
    first = mem.recall("what do I prefer?", 5, "model", recent_messages=[{"role": "user", "content": "about shells"}])
    second = mem.recall("what do I prefer?", 5, "model", recent_messages=[{"role": "user", "content": "about editors"}])
    assert first.keywords == ("shell",)
    assert second.keywords == (("shell",) if q21 else ("editor",))
    assert len(model.calls) == (1 if q21 else 2)


def test_q21_fixed_cache_still_hits_for_the_same_context(make: Factory) -> None:
    model = ScriptedModel.of([{"keywords": ["shell"], "intent": "general"}])
    mem = make("fixed", model=model)
    for _ in range(3):
        assert mem.recall("what do I prefer?", 5, "model", recent_messages=[]).keywords == ("shell",)
    assert len(model.calls) == 1


@pytest.mark.parametrize("q26", [True, False])
def test_q26_episode_entities_match_too_broadly(make: Factory, q26: bool) -> None:
    mem = make(Quirks.fixed().but(q26_episode_entities_broad=q26))
    save_episode(mem.db, {"session_id": "old", "summary": "Edited theme.json colours", "started_at": iso(T0),
                          "ended_at": iso(T0), "entities": ["theme.json"]})
    result = mem.recall("what is the weather like", 5, recent_messages=[])
    assert [c.source_type for c in result.items] == (["episode"] if q26 else [])
    assert ("the" in episode_entities("what is the weather like", broad=q26)) == q26


@pytest.mark.parametrize("q12", [True, False])
def test_q12_each_exchange_clears_the_recent_messages(make: Factory, q12: bool) -> None:
    mem = make(Quirks.fixed().but(q12_session_per_exchange=q12))
    mem.add_turns("s", [{"role": "user", "content": "first question"}, {"role": "assistant", "content": "first answer"},
                        {"role": "user", "content": "second question"}])
    recent = [m["content"] for m in mem.sessions.recent]
    assert recent == (["second question"] if q12 else ["first question", "first answer", "second question"])
