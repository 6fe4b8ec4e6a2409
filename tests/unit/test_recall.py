from __future__ import annotations

from datetime import timedelta

import pytest

from memory_core.clock import FixedClock
from memory_core.errors import ModelError
from memory_core.events import ListSink, RecallEvent
from memory_core.files.age import freshness_text
from memory_core.files.formats import to_ms
from memory_core.files.recall import (
    RECALL_SCHEMA,
    build_manifest,
    build_recall_prompt,
    recall,
    score_doc,
    select_by_model,
    select_heuristic,
    tokenize,
)
from memory_core.files.scan import scan
from memory_core.files.store import InMemoryStore, Store
from memory_core.files.topic import TopicDoc
from memory_core.model import ScriptedModel
from tests.conftest import T0
from tests.helpers import put_doc

QUERY = "check the dashboard reference for latency"


@pytest.fixture
def seeded(clock: FixedClock) -> InMemoryStore:
    store = InMemoryStore(clock)
    base = to_ms(T0)
    put_doc(store, "reference.md", "reference", "- grafana.internal/d/api-latency", name="Reference Memory",
            description="Grafana latency dashboard", mtime_ms=base - 3000)
    put_doc(store, "user.md", "user", "- Prefers terse replies.", name="User Memory",
            description="User preferences", mtime_ms=base - 2000)
    put_doc(store, "project.md", "project", "- Release freeze starts Friday.", name="Project Memory",
            description="Release plan", mtime_ms=base - 1000)
    return store


def test_tokenize_parity() -> None:
    assert tokenize("The THE go, Go-lang a1 é中文 and") == ["the", "lang", "and"]
    assert tokenize("中文查询") == []


def test_worked_example_scores(seeded: Store) -> None:
    docs = {d.relative_path: d for d in scan(seeded).docs}
    tokens = tokenize(QUERY)
    assert {p: score_doc(tokens, d) for p, d in docs.items()} == {"reference.md": 9, "user.md": 3, "project.md": 1}
    ranked = select_heuristic(QUERY, list(docs.values()))
    assert [d.relative_path for d in ranked] == ["reference.md", "user.md", "project.md"]


def test_substring_not_word_match() -> None:  # parity: "reference" matches inside "preferences"
    doc = TopicDoc("user", "u.md", "U", "preferences", "")
    assert score_doc(["reference"], doc) == 2


def test_ties_break_by_type_then_recency() -> None:
    docs = [TopicDoc("user", "u1.md", "x", "", "b"), TopicDoc("feedback", "f.md", "x", "", "b"),
            TopicDoc("user", "u2.md", "x", "", "b")]
    assert [d.relative_path for d in select_heuristic("zzz", docs)] == ["f.md", "u1.md", "u2.md"]


def test_body_bonus_means_something_always_comes_back() -> None:  # parity: spec §12
    docs = [TopicDoc("project", f"p{i}.md", "x", "", "body") for i in range(8)]
    assert len(select_heuristic("unrelated words", docs)) == 5
    assert select_heuristic("unrelated words", docs, limit=2) == docs[:2]
    assert select_heuristic("unrelated", [TopicDoc("project", "e.md", "x", "", "_No entries yet._")]) == []


def test_no_tokens_no_result(seeded: Store) -> None:
    docs = list(scan(seeded).docs)
    assert select_heuristic("a b go", docs) == []
    assert select_heuristic("数据库 配置", docs) == []
    assert select_heuristic(QUERY, docs, limit=0) == []


def test_recall_heuristic_excludes_surfaced_and_emits_one_event(seeded: Store, clock: FixedClock) -> None:
    sink = ListSink()
    out = recall(seeded, QUERY, now=clock.now(), excluded={"reference.md"}, events=sink, session_id="s")
    assert [d.relative_path for d in out.selected] == ["user.md", "project.md"]
    assert out.strategy == "heuristic"
    assert out.docs_scanned == 2
    [event] = sink.events
    assert isinstance(event, RecallEvent)
    assert (event.strategy, event.docs_scanned, event.docs_selected, event.query_length) == ("heuristic", 2, 2, 41)


def test_recall_blank_query_is_none(seeded: Store, clock: FixedClock) -> None:
    sink = ListSink()
    out = recall(seeded, "   ", now=clock.now(), events=sink)
    assert (out.strategy, out.prompt, out.selected) == ("none", "", ())
    assert len(sink.events) == 1


def test_prompt_block_format(clock: FixedClock) -> None:
    now = clock.now()
    fresh = TopicDoc("user", "user.md", "User Memory", "prefs", "- terse", to_ms(now))
    old = TopicDoc("reference", "reference.md", "Reference Memory", "", "", to_ms(now - timedelta(days=3)))
    text = build_recall_prompt([fresh, old], now=now)
    assert text.startswith("## Relevant memory\n\nUse the following memories only when they are directly relevant")
    assert "### User Memory (user.md)\nSaved today.\nprefs\n\n- terse\n\n" in text
    assert "### Reference Memory (reference.md)\nSaved 3 days ago.\n\n\n_No detailed entries yet._\n\n> NOTE: This" in text
    assert text.endswith("_No detailed entries yet._\n\n> NOTE: " + freshness_text(old.mtime_ms, now=now) + "\n")
    assert not text.endswith("\n\n")  # spec §7.5: a single trailing newline
    assert build_recall_prompt([], now=now) == ""


def test_prompt_body_truncated_at_1200(clock: FixedClock) -> None:
    doc = TopicDoc("user", "u.md", "U", "", "x" * 1199 + " " + "y" * 50, to_ms(clock.now()))
    text = build_recall_prompt([doc], now=clock.now())
    assert "x" * 1199 + "\n\n> NOTE: Relevant memory truncated for prompt budget." in text


def test_manifest_lines() -> None:
    docs = [TopicDoc("user", "user/a.md", "A", "desc", "", 1_775_030_400_000.7), TopicDoc("project", "b.md", "B", "", "")]
    assert build_manifest(docs) == (
        "- [user] user/a.md (2026-04-01T08:00:00.000Z): desc\n- [project] b.md (1970-01-01T00:00:00.000Z)"
    )


def test_model_request_shape(seeded: Store) -> None:
    docs = list(scan(seeded).docs)
    model = ScriptedModel.of([{"selected_memories": ["user.md", "reference.md"]}])
    picked = select_by_model(f"  {QUERY} ", docs, model=model, limit=5)
    assert [d.relative_path for d in picked] == ["user.md", "reference.md"]  # the model's order
    [request] = model.calls
    assert request.purpose == "auto-memory-recall"
    assert request.temperature == 0
    assert request.timeout_s == 5.0
    assert request.schema == RECALL_SCHEMA
    assert request.messages[1].content.startswith(f"Query: {QUERY}\n\nAvailable memories:\n- [project] project.md (")
    assert "up to 5" in request.messages[0].content
    assert request.prompt_version.startswith("recall_system@")


def test_model_recent_tools_line(seeded: Store) -> None:
    model = ScriptedModel.of([{"selected_memories": []}])
    select_by_model(QUERY, list(scan(seeded).docs), model=model, recent_tools=["grep", "read_file"])
    assert model.calls[0].messages[1].content.endswith("\n\nRecently used tools: grep, read_file")


def test_model_skipped_without_docs_or_query() -> None:
    model = ScriptedModel.of([])
    assert select_by_model("", [TopicDoc("user", "u.md", "u", "", "")], model=model) == []
    assert select_by_model("q", [], model=model) == []
    assert model.calls == []


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ({"selected_memories": ["nope.md"]}, "unknown_path"),
        ({"selected_memories": ["user.md", "nope.md"]}, "unknown_path"),  # one unknown rejects all (parity)
        ({"selected_memories": ["user.md"] * 6}, "too_many"),
        ("not json at all", "invalid_json"),
        ({"selected": []}, "schema"),
        ({"selected_memories": "user.md"}, "schema"),
        ({"selected_memories": [], "extra": 1}, "schema"),
        (TimeoutError("5 s elapsed"), "provider"),
        (ModelError("timed out", reason="timeout"), "timeout"),
    ],
)
def test_model_failures_fall_back_to_heuristic(seeded: Store, clock: FixedClock, reply: object, reason: str) -> None:
    sink = ListSink()
    out = recall(seeded, QUERY, now=clock.now(), model=ScriptedModel.of([reply]), events=sink)  # type: ignore[list-item]
    assert out.strategy == "heuristic"
    assert out.fallback_reason == reason
    assert out.selected[0].relative_path == "reference.md"
    assert len(sink.events) == 1


def test_model_empty_answer_is_none_without_fallback(seeded: Store, clock: FixedClock) -> None:
    out = recall(seeded, QUERY, now=clock.now(), model=ScriptedModel.of([{"selected_memories": []}]))
    assert (out.strategy, out.selected, out.fallback_reason) == ("none", (), None)


def test_model_answer_in_code_fence_is_accepted(seeded: Store, clock: FixedClock) -> None:
    fenced = 'Sure! ```json\n{"selected_memories": ["project.md"]}\n```'
    out = recall(seeded, QUERY, now=clock.now(), model=ScriptedModel.of([fenced]))
    assert out.strategy == "model"
    assert [d.relative_path for d in out.selected] == ["project.md"]
    assert "### Project Memory (project.md)" in out.prompt
