from __future__ import annotations

import errno
import json
import os
from datetime import timedelta

import pytest

from memory_core.clock import FixedClock
from memory_core.events import DreamEvent, ListSink
from memory_core.files.dedupe import plan_dedupe
from memory_core.files.dream import DreamScheduler, run_dream
from memory_core.files.entries import parse_entries
from memory_core.files.formats import iso_ms, to_ms
from memory_core.files.lock import lock_held, pid_alive
from memory_core.files.scan import scan
from memory_core.files.sessions import InMemorySessions
from memory_core.files.state import update_meta
from memory_core.files.store import LOCK_KEY, META_KEY, InMemoryStore, Store
from memory_core.model import ScriptedModel
from tests.helpers import put_doc

DEAD_PID = 999_999_999


def sessions_after(clock: FixedClock, n: int) -> InMemorySessions:
    return InMemorySessions.of({f"s{i}": to_ms(clock.now()) - 1000 for i in range(n)})


def scheduler(store: Store, clock: FixedClock, *, n_sessions: int = 5, **kw: object) -> DreamScheduler:
    return DreamScheduler(store, sessions_after(clock, n_sessions), **kw)  # type: ignore[arg-type]


def test_disabled_first(clock: FixedClock) -> None:
    store = InMemoryStore(clock)
    out = scheduler(store, clock, enabled=False).schedule(now=clock.now(), session_id="x")
    assert (out.status, out.skipped_reason) == ("skipped", "disabled")
    assert store.stat(META_KEY) is None  # gate 1 is before the scaffold


def test_same_session_then_min_hours(clock: FixedClock) -> None:
    store = InMemoryStore(clock)
    update_meta(store, now=clock.now(), lastDreamSessionId="cur", lastDreamAt=iso_ms(clock.now() - timedelta(hours=1)))
    s = scheduler(store, clock)
    assert s.schedule(now=clock.now(), session_id="cur").skipped_reason == "same_session"
    assert s.schedule(now=clock.now(), session_id="other").skipped_reason == "min_hours"


def test_unparsable_last_dream_passes_min_hours(clock: FixedClock) -> None:
    store = InMemoryStore(clock)
    update_meta(store, now=clock.now(), lastDreamAt="garbage")
    assert scheduler(store, clock).schedule(now=clock.now(), session_id="x").status == "noop"


def test_min_sessions_then_scan_throttle(clock: FixedClock) -> None:
    store = InMemoryStore(clock)
    s = scheduler(store, clock, n_sessions=4)
    first = s.schedule(now=clock.now(), session_id="x")
    assert (first.skipped_reason, first.session_count) == ("min_sessions", 4)
    assert s.schedule(now=clock.now() + timedelta(minutes=9), session_id="x").skipped_reason == "scan_throttled"
    assert s.schedule(now=clock.now() + timedelta(minutes=10), session_id="x").skipped_reason == "min_sessions"


def test_current_session_is_excluded_from_the_count(clock: FixedClock) -> None:
    store = InMemoryStore(clock)
    s = scheduler(store, clock, n_sessions=5)
    assert s.schedule(now=clock.now(), session_id="s0").skipped_reason == "min_sessions"


def test_sessions_before_last_dream_do_not_count(clock: FixedClock) -> None:
    store = InMemoryStore(clock)
    update_meta(store, now=clock.now(), lastDreamAt=iso_ms(clock.now() - timedelta(hours=30)))
    sessions = InMemorySessions.of({f"old{i}": to_ms(clock.now() - timedelta(hours=31)) for i in range(9)})
    out = DreamScheduler(store, sessions).schedule(now=clock.now(), session_id="x")
    assert (out.skipped_reason, out.session_count) == ("min_sessions", 0)


def test_locked_by_live_process(clock: FixedClock) -> None:
    store = InMemoryStore(clock)
    store.write(LOCK_KEY, str(os.getpid()))
    out = scheduler(store, clock).schedule(now=clock.now() + timedelta(minutes=59), session_id="x")
    assert out.skipped_reason == "locked"
    assert store.stat(LOCK_KEY) is not None


def test_stale_lock_is_reclaimed(clock: FixedClock) -> None:
    store = InMemoryStore(clock)
    store.write(LOCK_KEY, str(os.getpid()))
    out = scheduler(store, clock).schedule(now=clock.now() + timedelta(minutes=61), session_id="x")
    assert out.status == "noop"
    assert store.stat(LOCK_KEY) is None  # released after the run


def test_dead_pid_lock_is_deleted(clock: FixedClock) -> None:
    store = InMemoryStore(clock)
    store.write(LOCK_KEY, str(DEAD_PID))
    assert lock_held(store, now=clock.now()) is False
    assert store.stat(LOCK_KEY) is None


@pytest.mark.parametrize("text", ["", "abc", "0", "99999999999999999999999", "\ufffd\x00", f"{DEAD_PID}x"])
def test_unparsable_lock_is_held_while_young_and_stale_after(clock: FixedClock, text: str) -> None:
    # fix: spec §6.3 — an empty/unparsable lock is a lock being written (or a foreign one): held, not stolen
    store = InMemoryStore(clock)
    store.write(LOCK_KEY, text)
    assert lock_held(store, now=clock.now()) is True
    assert store.stat(LOCK_KEY) is not None
    assert lock_held(store, now=clock.now() + timedelta(minutes=61)) is False
    assert store.stat(LOCK_KEY) is None


def test_eperm_counts_as_alive(monkeypatch: pytest.MonkeyPatch) -> None:
    def kill(pid: int, sig: int) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "kill", kill)
    # fix: spec §12 — upstream treats EPERM as dead and steals another user's lock
    assert pid_alive(1) is True


def test_running_gate(clock: FixedClock) -> None:
    s = scheduler(InMemoryStore(clock), clock)
    s.running = True
    assert s.schedule(now=clock.now(), session_id="x").skipped_reason == "running"


def test_successful_dream_writes_metadata_at_scheduling_time(clock: FixedClock) -> None:
    store = InMemoryStore(clock)
    put_doc(store, "user/a.md", "user", "b fact\n\na fact\n\nb fact")
    sink = ListSink()
    out = scheduler(store, clock, events=sink).schedule(now=clock.now(), session_id="cur")
    assert (out.status, out.deduped_entries, out.touched_topics) == ("updated", 1, ("user",))
    meta = json.loads(store.read(META_KEY))
    assert meta["lastDreamAt"] == iso_ms(clock.now())
    assert meta["lastDreamSessionId"] == "cur"
    assert meta["lastDreamStatus"] == "updated"
    assert store.stat(LOCK_KEY) is None
    assert [e.status for e in sink.events if isinstance(e, DreamEvent)] == ["updated"]
    assert store.read("user/a.md").endswith("\n---\n\na fact\n\nb fact\n")


def test_force_skips_gates_but_not_the_lock(clock: FixedClock) -> None:
    store = InMemoryStore(clock)
    update_meta(store, now=clock.now(), lastDreamSessionId="cur")
    s = scheduler(store, clock, n_sessions=0)
    assert s.schedule(now=clock.now(), session_id="cur", force=True).status == "noop"
    store.write(LOCK_KEY, str(os.getpid()))
    assert s.schedule(now=clock.now(), session_id="cur", force=True).skipped_reason == "locked"


def test_corrupt_meta_is_rebuilt_with_a_warning(clock: FixedClock) -> None:
    # fix: spec §1.7 — a corrupt meta.json no longer fails every dream for good: ignored, warned, rebuilt
    store = InMemoryStore(clock)
    store.write(META_KEY, "{broken")
    sink = ListSink()
    out = scheduler(store, clock, events=sink).schedule(now=clock.now(), session_id="x")
    assert out.status == "noop"
    assert any(w.startswith("meta.json: line 1: invalid JSON") for w in out.warnings)
    assert sink.events[0].warnings == out.warnings
    assert json.loads(store.read(META_KEY))["lastDreamSessionId"] == "x"


def test_failed_dream_emits_event(clock: FixedClock) -> None:
    class Boom(InMemoryStore):
        armed = False

        def write(self, key: str, text: str) -> None:
            if self.armed and key.startswith("user/"):
                raise OSError(28, "No space left on device", key)
            InMemoryStore.write(self, key, text)

    store = Boom(clock)
    put_doc(store, "user/a.md", "user", "b fact\n\na fact\n\nb fact")
    store.armed = True
    sink = ListSink()
    out = scheduler(store, clock, events=sink).schedule(now=clock.now(), session_id="x")
    assert out.status == "failed"
    assert "user/a.md" in (out.error or "")
    # fix: spec §12 — upstream emits no telemetry when a dream fails
    assert [e.status for e in sink.events] == ["failed"]


def test_cross_file_dedupe_keeps_every_entry_text(clock: FixedClock) -> None:
    store = InMemoryStore(clock)
    put_doc(store, "user/new.md", "user", "Likes Go\n\nWhy: fast builds\n\nUses vim daily", mtime_ms=2000)
    put_doc(store, "user/old.md", "user", "likes go\n\nWhy: simple tooling\n\nHow to apply: suggest go", mtime_ms=1000)
    out = run_dream(store, now=clock.now())
    assert out.deduped_entries == 1
    assert store.stat("user/old.md") is None
    entries = parse_entries(scan(store).docs[0].body)
    # fix: spec §12 — upstream keeps only one merged entry (losing "Uses vim daily") and may drop "simple tooling"
    assert [e.summary for e in entries] == ["likes go", "Uses vim daily"]
    assert entries[0].why == "fast builds simple tooling"
    assert entries[0].how_to_apply == "suggest go"
    assert "user/old.md" not in store.read("MEMORY.md")


def test_dedupe_is_idempotent(clock: FixedClock) -> None:
    store = InMemoryStore(clock)
    put_doc(store, "user/a.md", "user", "x one\n\ny two", mtime_ms=3)
    put_doc(store, "user/b.md", "user", "X one\n\nz three", mtime_ms=2)
    put_doc(store, "feedback/c.md", "feedback", "x one", mtime_ms=1)  # other type: not a duplicate
    assert run_dream(store, now=clock.now()).status == "updated"
    assert run_dream(store, now=clock.now()).status == "noop"
    assert plan_dedupe(scan(store).docs).deduped_entries == 0


def test_model_consolidation_and_unknown_id_fallback(clock: FixedClock) -> None:
    store = InMemoryStore(clock)
    put_doc(store, "user/a.md", "user", "Prefers Go", mtime_ms=3)
    put_doc(store, "user/b.md", "user", "Likes golang\n\nUses vim", mtime_ms=2)
    plan = {"operations": [{"op": "merge", "ids": ["user/a.md", "user/b.md:0"], "into": "user/a.md",
                            "summary": "Prefers Go (golang)"}, {"op": "delete", "id": "user/b.md:1"}]}
    out = run_dream(store, now=clock.now(), model=ScriptedModel.of([plan]))
    assert (out.strategy, out.deduped_entries, out.touched_topics) == ("model", 2, ("user",))
    assert store.read("user/a.md").endswith("\n\nPrefers Go (golang)\n")
    assert store.stat("user/b.md") is None
    bad = run_dream(store, now=clock.now(), model=ScriptedModel.of([{"operations": [{"op": "delete", "id": "../x"}]}]))
    assert (bad.strategy, bad.fallback_reason) == ("heuristic", "unknown_id")
    assert store.stat("user/a.md") is not None


@pytest.mark.parametrize(
    ("plan", "reason"),
    [
        ({"operations": [{"op": "merge", "ids": ["user/a.md"], "into": "user/a.md"}]}, "schema"),
        ({"operations": [{"op": "delete", "id": "user/a.md"}, {"op": "delete", "id": "user/a.md"}]}, "schema"),
        ({"operations": [{"op": "explode", "id": "user/a.md"}]}, "schema"),
        ({"operations": [{"op": "rewrite", "id": "/etc/passwd", "summary": "x"}]}, "unknown_id"),
        ("not json", "invalid_json"),
        ({"ops": []}, "schema"),
    ],
)
def test_model_consolidation_fallbacks_leave_entries_alone(clock: FixedClock, plan: object, reason: str) -> None:
    store = InMemoryStore(clock)
    put_doc(store, "user/a.md", "user", "Prefers Go", mtime_ms=2)
    put_doc(store, "user/b.md", "user", "Uses vim", mtime_ms=1)
    out = run_dream(store, now=clock.now(), model=ScriptedModel.of([plan]))  # type: ignore[list-item]
    assert (out.strategy, out.fallback_reason) == ("heuristic", reason)
    assert {d.relative_path for d in scan(store).docs} == {"user/a.md", "user/b.md"}


def test_model_plan_keeps_entries_it_does_not_name(clock: FixedClock) -> None:
    store = InMemoryStore(clock)
    put_doc(store, "user/a.md", "user", "one\n\ntwo\n\nthree", mtime_ms=2)
    out = run_dream(store, now=clock.now(), model=ScriptedModel.of([{"operations": [{"op": "delete", "id": "user/a.md:1"}]}]))
    assert out.strategy == "model"
    assert [e.summary for e in parse_entries(scan(store).docs[0].body)] == ["one", "three"]
