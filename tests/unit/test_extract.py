from __future__ import annotations

import json
import threading
from datetime import timedelta

import pytest

from memory_core.clock import FixedClock
from memory_core.errors import ModelError
from memory_core.events import ExtractEvent, ListSink
from memory_core.files.extract import ExtractRequest, ExtractScheduler, run_extract, slugify
from memory_core.files.history import ChatMessage, ToolCall, transcript
from memory_core.files.patches import Patch
from memory_core.files.store import CURSOR_KEY, META_KEY, InMemoryStore, Store
from memory_core.model import ModelRequest, ScriptedModel

ROOT = "/p/.qwen/memory"


def user(text: str) -> ChatMessage:
    return ChatMessage("user", text)


def model_msg(text: str, *calls: ToolCall) -> ChatMessage:
    return ChatMessage("model", text, calls)


def req(*messages: ChatMessage, session: str = "s1") -> ExtractRequest:
    return ExtractRequest(session, tuple(messages))


def test_transcript_keeps_full_history_offsets() -> None:
    history = [user("hi  there"), model_msg("", ToolCall("read_file", {"path": "x"})), model_msg("ok"),
               ChatMessage("tool", "result")]
    assert [(ln.offset, ln.role, ln.text) for ln in transcript(history)] == [(0, "user", "hi there"), (2, "model", "ok")]


def test_extract_creates_slugged_file_meta_index_and_cursor(store: Store, clock: FixedClock) -> None:
    out = run_extract(store, req(user("I prefer terse answers in code review"), model_msg("ok")),
                      now=clock.now(), root=ROOT)
    assert out.status == "completed"
    assert out.touched_topics == ("user",)
    assert out.written == ("user/i-prefer-terse-answers-in-code-review.md",)
    text = store.read("user/i-prefer-terse-answers-in-code-review.md")
    assert text == ("---\nname: I prefer terse answers in code review\ndescription: I prefer terse answers in code review"
                    "\ntype: user\n---\n\nI prefer terse answers in code review\n")
    assert "(user/i-prefer-terse-answers-in-code-review.md)" in store.read("MEMORY.md")
    meta = json.loads(store.read(META_KEY))
    assert meta["lastExtractionTouchedTopics"] == ["user"]
    assert meta["lastExtractionStatus"] == "updated"
    assert json.loads(store.read(CURSOR_KEY)) == {"sessionId": "s1", "processedOffset": 2,
                                                  "updatedAt": "2026-04-01T08:00:00.000Z"}
    assert out.system_message == "Managed auto-memory updated: user.md"


def test_cursor_slices_and_second_run_is_noop(store: Store, clock: FixedClock) -> None:
    history = [user("I prefer terse answers in code review"), model_msg("ok")]
    run_extract(store, req(*history), now=clock.now(), root=ROOT)
    again = run_extract(store, req(*history), now=clock.now(), root=ROOT)
    assert (again.touched_topics, again.patches) == ((), ())
    more = run_extract(store, req(*history, user("always run the linter before pushing")), now=clock.now(), root=ROOT)
    assert more.touched_topics == ("feedback",)
    assert json.loads(store.read(CURSOR_KEY))["processedOffset"] == 3


def test_cursor_from_another_session_starts_at_zero(store: Store, clock: FixedClock) -> None:
    run_extract(store, req(user("I prefer terse answers in code review"), session="a"), now=clock.now(), root=ROOT)
    out = run_extract(store, req(user("I prefer terse answers in code review"), session="b"), now=clock.now(), root=ROOT)
    assert out.patches
    assert not out.touched_topics


def test_slice_without_user_message_only_moves_cursor(store: Store, clock: FixedClock) -> None:
    out = run_extract(store, req(model_msg("hello")), now=clock.now(), root=ROOT)
    assert (out.status, out.processed_offset) == ("completed", 1)
    assert json.loads(store.read(META_KEY)).get("lastExtractionAt") is None


def test_existing_doc_with_same_first_summary_is_merged(store: Store, clock: FixedClock) -> None:
    run_extract(store, req(user("I prefer terse answers in code review")), now=clock.now(), root=ROOT)
    model = ScriptedModel.of([{"patches": [{"topic": "user", "summary": "i prefer terse answers in code review",
                                            "why": "reads diffs"}]}])
    out = run_extract(store, req(user("x" * 20), session="s2"), now=clock.now(), root=ROOT, model=model)
    assert out.written == ("user/i-prefer-terse-answers-in-code-review.md",)
    assert "Why: reads diffs" in store.read("user/i-prefer-terse-answers-in-code-review.md")


def test_slug_collision_gets_a_suffix(store: Store, clock: FixedClock) -> None:
    run_extract(store, req(user("I prefer terse answers in code review")), now=clock.now(), root=ROOT)
    model = ScriptedModel.of([{"patches": [{"topic": "user", "summary": "I prefer terse answers in code review!!"}]}])
    out = run_extract(store, req(user("x" * 20), session="s2"), now=clock.now(), root=ROOT, model=model)
    assert out.written == ("user/i-prefer-terse-answers-in-code-review-2.md",)


def test_slugify() -> None:
    assert slugify("  Hello, World!  ") == "hello-world"
    assert slugify("???") == "memory"
    assert len(slugify("a" * 200)) == 80


def test_memory_tool_skip_is_not_sticky(store: Store, clock: FixedClock) -> None:
    wrote = model_msg("saved", ToolCall("write_file", {"file_path": f"{ROOT}/user/x.md"}))
    first = run_extract(store, req(user("I prefer terse answers in code review"), wrote), now=clock.now(), root=ROOT)
    assert (first.status, first.skipped_reason) == ("skipped", "memory_tool")
    # fix: spec §12 — upstream scans the whole history, so this later turn would be skipped too
    later = run_extract(store, req(user("I prefer terse answers in code review"), wrote,
                                   user("always run the linter before pushing")), now=clock.now(), root=ROOT)
    assert later.status == "completed"
    assert later.touched_topics == ("feedback",)


@pytest.mark.parametrize(
    ("call", "skips"),
    [
        (ToolCall("edit", {"path": f"{ROOT}/feedback/a.md"}), True),
        (ToolCall("replace", {"target_file": f"{ROOT}/a.md"}), True),
        (ToolCall("create_file", {"file_path": None, "path": f"{ROOT}/b.md"}), True),
        (ToolCall("read_file", {"file_path": f"{ROOT}/a.md"}), False),
        (ToolCall("write_file", {"file_path": "/p/src/main.py"}), False),
        (ToolCall("write_file", {"file_path": f"{ROOT}-old/a.md"}), False),
    ],
)
def test_memory_tool_detection(store: Store, clock: FixedClock, call: ToolCall, skips: bool) -> None:
    out = run_extract(store, req(user("I prefer terse answers in code review"), model_msg("", call)),
                      now=clock.now(), root=ROOT)
    assert (out.skipped_reason == "memory_tool") is skips


def test_model_extraction_applies_filters_and_reports_strategy(store: Store, clock: FixedClock) -> None:
    model = ScriptedModel.of([{"patches": [
        {"topic": "feedback", "summary": "Stop summarizing at the end of responses", "why": "reads the diff"},
        {"topic": "project", "summary": "deploying today"},  # transient: dropped
        {"topic": "user", "summary": "is this right?"},  # question: dropped
    ]}])
    out = run_extract(store, req(user("stop summarizing, I can read the diff")), now=clock.now(), root=ROOT,
                      model=model)
    assert out.strategy == "model"
    assert [p.summary for p in out.patches] == ["Stop summarizing at the end of responses"]
    [call] = model.calls
    assert call.purpose == "auto-memory-extract"
    assert "[0] user: stop summarizing, I can read the diff" in call.messages[1].content


def test_model_extraction_falls_back_on_bad_topic(store: Store, clock: FixedClock) -> None:
    model = ScriptedModel.of([{"patches": [{"topic": "secrets", "summary": "x" * 20}]}])
    out = run_extract(store, req(user("I prefer terse answers in code review")), now=clock.now(), root=ROOT,
                      model=model)
    assert (out.strategy, out.fallback_reason) == ("heuristic", "schema")
    assert out.touched_topics == ("user",)


@pytest.mark.parametrize("text", ["{not json", "", "[" * 100_000, "1" * 100_000, '{"a":' * 40 + "1" + "}" * 40])
def test_corrupt_cursor_is_ignored_with_a_warning_event(clock: FixedClock, text: str) -> None:
    # fix: spec §1.8 — a corrupt cursor no longer fails every extraction for good: ignored, warned, rewritten
    store = InMemoryStore(clock)
    store.write(CURSOR_KEY, text)
    sink = ListSink()
    out = ExtractScheduler(store, ROOT, events=sink).schedule(req(user("I prefer terse answers always")),
                                                              now=clock.now())
    assert out.status == "completed"
    assert any(w.startswith("extract-cursor.json: ") for w in out.warnings)
    assert isinstance(sink.events[0], ExtractEvent)
    assert sink.events[0].warnings == out.warnings
    assert json.loads(store.read(CURSOR_KEY))["processedOffset"] == 1


class BlockingModel:
    """A model whose first call blocks until released (to hold an extraction in flight)."""

    def __init__(self) -> None:
        self.entered, self.release = threading.Event(), threading.Event()
        self.calls: list[ModelRequest] = []
        self.inner = ScriptedModel.of([{"patches": []}] * 5)

    @property
    def name(self) -> str:
        return "blocking"

    def query(self, request: ModelRequest):  # type: ignore[no-untyped-def]
        self.calls.append(request)
        if len(self.calls) == 1:
            self.entered.set()
            assert self.release.wait(5)
        return self.inner.query(request)


def test_scheduler_queues_one_trailing_request_and_supersedes(clock: FixedClock) -> None:
    store = InMemoryStore(clock)
    model = BlockingModel()
    sink = ListSink()
    scheduler = ExtractScheduler(store, ROOT, model=model, events=sink)
    results = []
    worker = threading.Thread(target=lambda: results.append(
        scheduler.schedule(req(user("first message here")), now=clock.now())))
    worker.start()
    assert model.entered.wait(5)
    second = scheduler.schedule(req(user("first message here"), user("second message here")), now=clock.now())
    third = scheduler.schedule(req(user("first message here"), user("second message here"),
                                   user("third message here")), now=clock.now() + timedelta(seconds=1))
    assert (second.skipped_reason, third.skipped_reason) == ("queued", "queued")
    model.release.set()
    worker.join(5)
    assert results[0].status == "completed"
    assert scheduler.trailing_runs == 1  # the third superseded the second: one trailing run
    assert len(model.calls) == 2
    assert "[2] user: third message here" in model.calls[1].messages[1].content
    statuses = [(e.status, e.skipped_reason) for e in sink.events if isinstance(e, ExtractEvent)]
    assert statuses == [("skipped", "queued"), ("skipped", "queued"), ("completed", None), ("completed", None)]
    after = scheduler.schedule(req(user("fourth message here, a long one")), now=clock.now())
    assert after.status == "completed"  # not stuck in "running"


def test_patch_source_offsets() -> None:
    assert Patch("user", "abc").dedupe_key == "user:abc"


def test_cursor_uses_full_history_offsets_with_tool_messages(store: Store, clock: FixedClock) -> None:
    # fix: spec §12 — upstream stores the count of text-bearing messages (2 here), so the next slice re-reads
    # old messages; the offset here is the full-history length (4), one index space with the slice start.
    history = [user("always rebase before merging"), model_msg("", ToolCall("read_file", {"path": "x"})),
               model_msg("ok"), ChatMessage("tool", "")]
    run_extract(store, req(*history), now=clock.now(), root=ROOT)
    assert json.loads(store.read(CURSOR_KEY))["processedOffset"] == 4
    later = run_extract(store, req(*history, user("never skip ci on release branches")), now=clock.now(), root=ROOT)
    assert [p.source_offset for p in later.patches] == [4]


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (ModelError("timed out after 30s", reason="timeout"), "timeout"),
        ("I found these facts: the user likes go", "invalid_json"),
        ({"patches": "none"}, "schema"),
        ({"patches": [{"summary": "missing topic here"}]}, "schema"),
        (RuntimeError("connection reset"), "provider"),
    ],
)
def test_model_extraction_fallbacks(store: Store, clock: FixedClock, reply: object, reason: str) -> None:
    out = run_extract(store, req(user("I prefer terse answers in code review")), now=clock.now(), root=ROOT,
                      model=ScriptedModel.of([reply]))  # type: ignore[list-item]
    assert (out.strategy, out.fallback_reason) == ("heuristic", reason)
    assert out.touched_topics == ("user",)


def test_a_hold_queues_several_requests_and_release_runs_the_last_once(clock: FixedClock) -> None:
    store = InMemoryStore(clock)
    sink = ListSink()
    scheduler = ExtractScheduler(store, ROOT, events=sink)
    scheduler.begin_hold()
    assert scheduler.holding
    outs = [scheduler.schedule(req(user(f"I always prefer option number {n} here"), session=f"s{n}"), now=clock.now())
            for n in (1, 2, 3)]
    assert [o.skipped_reason for o in outs] == ["queued"] * 3
    ran = scheduler.release()
    assert [sid for sid, _ in ran] == ["s3"]  # the later requests superseded the earlier ones
    assert ran[0][1].status == "completed"
    assert not scheduler.holding
    with pytest.raises(RuntimeError, match="no hold"):
        scheduler.release()
    assert scheduler.schedule(req(user("a fresh request afterwards, long enough")),
                                                            now=clock.now()).status == "completed"


def test_release_with_nothing_queued_runs_nothing(clock: FixedClock) -> None:
    scheduler = ExtractScheduler(InMemoryStore(clock), ROOT)
    scheduler.begin_hold()
    assert scheduler.release() == []
    with pytest.raises(RuntimeError, match="already running"), scheduler.hold():
        scheduler.begin_hold()
