"""TTL boundaries (2h, 24h, 3d, 7d, 30d) for cleanup and the read-time filter; the stuck-queue recovery; retention."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory_core.clock import FixedClock
from memory_core.model import ScriptedModel
from memory_core.sqlite import SqliteMemory
from memory_core.sqlite.stamps import iso
from memory_core.sqlite.tables import dequeue, enqueue, queue_rows
from tests.sqlite.conftest import T0, Factory

TTLS = {"session": timedelta(hours=2), "24h": timedelta(hours=24), "7d": timedelta(days=7)}
PRIORITY_TTLS = {0.5: timedelta(days=3), 0.7: timedelta(days=30)}


@pytest.mark.parametrize("mode", ["seed", "fixed"])
@pytest.mark.parametrize("duration", list(TTLS))
def test_extracted_duration_ttl_boundaries(make: Factory, clock: FixedClock, mode: str, duration: str) -> None:
    item = {"type": "FACT", "subject": "project", "predicate": "phase", "content": f"Phase note kept for {duration}",
            "importance": 0.7, "duration": duration}
    mem = make(mode, model=ScriptedModel.of([{"items": [item]}, {"summary": "phase"}]))
    mem.add_turns("s", [{"role": "user", "content": "We are in the integration phase of the project right now."}])
    (mid,) = mem.extract("s").memory_ids
    assert mem.db.get_memory(mid)["expires_at"] == iso(T0 + TTLS[duration])  # type: ignore[index]
    _assert_boundary(mem, clock, mid, TTLS[duration], "Phase note")


@pytest.mark.parametrize("mode", ["seed", "fixed"])
@pytest.mark.parametrize("importance", list(PRIORITY_TTLS))
def test_priority_ttl_boundaries(make: Factory, clock: FixedClock, mode: str, importance: float) -> None:
    mem = make(mode)
    mid = mem.add_memory("Manual note about the release train", "fact", importance)
    assert mem.add_memory("manual NOTE about the release train ", "fact", importance) == ""  # exact duplicate
    _assert_boundary(mem, clock, mid, PRIORITY_TTLS[importance], "release train")


def _assert_boundary(mem: SqliteMemory, clock: FixedClock, mid: str, ttl: timedelta, query: str) -> None:
    def visible() -> bool:
        return any(c.memory_id == mid for c in mem.recall(query, 10, path="typed").items)

    clock.set(T0 + ttl - timedelta(seconds=1))
    assert visible()
    clock.set(T0 + ttl)  # expires_at < now is the rule: at the instant itself it is still live
    assert visible()
    assert mem.db.cleanup_expired() == 0
    clock.set(T0 + ttl + timedelta(seconds=1))
    assert not visible()  # the read-time filter, before any cleanup
    assert mem.db.get_memory(mid) is not None
    mem.dream()
    assert mem.db.get_memory(mid) is None


def test_stuck_queue_recovers_after_thirty_minutes(make: Factory, clock: FixedClock) -> None:
    mem = make("fixed")
    enqueue(mem.db, "s", 0, "something worth extracting later")
    (claimed,) = dequeue(mem.db)
    assert claimed["retry_count"] == 0
    assert queue_rows(mem.db)[0]["status"] == "processing"
    clock.advance(timedelta(minutes=29, seconds=59))
    assert dequeue(mem.db) == []
    clock.advance(timedelta(seconds=2))
    (again,) = dequeue(mem.db)
    assert again["retry_count"] == 1
    clock.advance(timedelta(minutes=31))
    dequeue(mem.db)
    clock.advance(timedelta(minutes=31))
    assert dequeue(mem.db) == []  # retry_count reached max_retries (3)
    assert queue_rows(mem.db)[0]["retry_count"] == 3


def test_enqueue_ignores_a_second_batch_with_the_same_indices(make: Factory) -> None:
    mem = make("seed")
    assert enqueue(mem.db, "s", 0, "first batch message")
    assert not enqueue(mem.db, "s", 0, "second batch message reusing index 0")
    assert [r["content"] for r in queue_rows(mem.db)] == ["first batch message"]


@pytest.mark.parametrize("mode", ["seed", "fixed"])
def test_cleanup_runs_at_end_of_session(make: Factory, clock: FixedClock, mode: str) -> None:
    mem = make(mode)
    mem.seed([{"content": "short lived", "duration": "session"}, {"content": "long lived"}])
    clock.advance(timedelta(hours=2, seconds=1))
    mem.add_turns("s", [{"role": "user", "content": "hi"}])
    result = mem.extract("s")
    assert (result.status, result.note, result.expired_removed) == ("completed", "no_eligible_turns", 1)
    assert [d.text for d in mem.documents()] == ["long lived"]


def test_trace_search_days_back_window(make: Factory, clock: FixedClock) -> None:
    mem = make("fixed")
    mem.add_turns("old", [{"role": "user", "content": "deploy the payments service"}])
    clock.advance(timedelta(days=7, seconds=1))
    mem.add_turns("new", [{"role": "user", "content": "deploy the search service"}])
    assert [r["session_id"] for r in mem.search_traces("deploy")] == ["new"]
    assert [r["session_id"] for r in mem.search_traces("deploy", days_back=8)] == ["new", "old"]
    with pytest.raises(ValueError, match="keyword"):
        mem.search_traces("  ")
