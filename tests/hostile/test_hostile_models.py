"""Hostile model answers and failing models (issues 14, 23): every answer is validated in linear time, and every
failure — invalid JSON, schema, any exception the model raises — becomes the heuristic fallback with a reason
that the outcome and the event both carry."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from memory_core.clock import FixedClock
from memory_core.errors import ModelError
from memory_core.events import ListSink
from memory_core.files.dream import DreamScheduler
from memory_core.files.extract import ExtractRequest, ExtractScheduler, apply_patches, plan_by_model
from memory_core.files.forget import forget
from memory_core.files.history import ChatMessage, transcript
from memory_core.files.patches import Patch
from memory_core.files.recall import recall
from memory_core.files.scan import scan
from memory_core.files.sessions import InMemorySessions
from memory_core.files.store import INDEX_KEY, InMemoryStore
from memory_core.model import ModelReply, ModelRequest, ScriptedModel, parse_json_lenient
from tests.conftest import T0
from tests.helpers import cpu_seconds
from tests.hostile.checks import index_targets
from tests.hostile.harness import seeded_store, within


@dataclass
class RawModel:
    """A model that does no validation at all: returns whatever data it is given, or raises what it is given."""

    answer: Any
    name: str = "raw"
    calls: list[ModelRequest] = field(default_factory=list)

    def query(self, request: ModelRequest) -> ModelReply:
        self.calls.append(request)
        if isinstance(self.answer, BaseException):
            raise self.answer
        return ModelReply(self.answer, repr(self.answer)[:100], self.name)


TEXT_ANSWERS = [
    ("[" * 100_000, "invalid_json"),
    ('{"patches": [' + "[" * 50_000 + "]" * 50_000 + "]}", "invalid_json"),
    ('{"patches": [], "n": ' + "9" * 100_000 + "}", "invalid_json"),
    ('{"patches": [{"topic": "user", "summary": "Prefers \\ud800 tabs always"}]}', "invalid_json"),
    ('{"patches": null}', "schema"),
    ('{"patches": "many"}', "schema"),
    ('{"patches": [1, 2]}', "schema"),
    ('{"patches": [{"topic": "user", "summary": 5}]}', "schema"),
    ('{"patches": [{"topic": ["user"], "summary": "Prefers tabs always"}]}', "schema"),
    ("not json at all", "invalid_json"),
    ("", "invalid_json"),
]


@pytest.mark.parametrize(("answer", "reason"), TEXT_ANSWERS, ids=range(len(TEXT_ANSWERS)))
def test_hostile_extraction_answers_fall_back_with_a_reason(answer: str, reason: str) -> None:
    store, sink = InMemoryStore(FixedClock(T0)), ListSink()
    request = ExtractRequest("s", (ChatMessage("user", "Remember that I always use tabs for indentation"),))
    out = within(lambda: ExtractScheduler(store, "/r", model=ScriptedModel.of([answer]), events=sink)
                 .schedule(request, now=T0))
    assert (out.status, out.strategy, out.fallback_reason) == ("completed", "heuristic", reason)
    assert sink.events[-1].fallback_reason == reason
    assert out.touched_topics  # the heuristic ran instead


RAW_DATA = [None, [], "x", 5, {"patches": None}, {"patches": [None]}, {"patches": {"a": 1}},
            {"patches": [{"topic": "user", "summary": "ok summary here", "why": ["x"]}]},
            {"operations": None, "selected_memories": None, "selectedCandidateIds": None},
            {"operations": [{"op": "rewrite", "id": 1}], "selectedCandidateIds": [None], "selected_memories": [3]}]


@pytest.mark.parametrize("data", RAW_DATA, ids=range(len(RAW_DATA)))
def test_unvalidated_answers_never_escape_any_operation(tmp_path: Path, data: Any) -> None:
    store, sink = seeded_store(tmp_path), ListSink()
    model = RawModel(data)
    request = ExtractRequest("s", (ChatMessage("user", "Remember that I always use tabs for indentation"),))
    ex = within(lambda: ExtractScheduler(store, str(store.root), model=model, events=sink).schedule(request, now=T0))
    assert (ex.status, ex.strategy, ex.fallback_reason) == ("completed", "heuristic", "schema")
    dr = within(lambda: DreamScheduler(store, InMemorySessions(), model=model, events=sink)
                .schedule(now=T0, session_id="s", force=True))
    assert (dr.status, dr.strategy) in {("updated", "heuristic"), ("noop", "heuristic")}
    assert dr.fallback_reason in ("schema", "unknown_id")
    fg = within(lambda: forget(store, "tabs", now=T0, model=model, events=sink))
    assert fg.error is None
    assert fg.fallback_reason in ("schema", "unknown_id")
    rc = within(lambda: recall(store, "tabs indentation", now=T0, model=model, events=sink))
    # files/recall.py reads reply.data itself: a non-object answer reaches it as an AttributeError ("exception")
    assert rc.fallback_reason in ("schema", "unknown_path", "exception")
    assert all(e.fallback_reason for e in sink.events if getattr(e, "strategy", "") == "heuristic")
    assert fg.removed  # the heuristic forgot the extracted tabs entry
    index_targets(store.read(INDEX_KEY), docs=len(scan(store).docs))


EXCEPTIONS = [(RuntimeError("boom"), "exception"), (TimeoutError("slow"), "timeout"),
              (ConnectionError("refused"), "connection"), (KeyError("choices"), "exception"),
              (RecursionError("deep"), "invalid_json"), (ValueError("bad"), "exception"),
              (UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed"), "invalid_json"),
              (MemoryError(), "exception"), (OSError(5, "EIO"), "exception")]


@pytest.mark.parametrize(("exc", "reason"), EXCEPTIONS, ids=[type(e).__name__ for e, _ in EXCEPTIONS])
def test_any_model_exception_becomes_the_heuristic_fallback(tmp_path: Path, exc: BaseException, reason: str) -> None:
    store, sink = seeded_store(tmp_path), ListSink()
    model = RawModel(exc)
    request = ExtractRequest("s", (ChatMessage("user", "Remember that I always use tabs for indentation"),))
    ex = within(lambda: ExtractScheduler(store, str(store.root), model=model, events=sink).schedule(request, now=T0))
    dr = within(lambda: DreamScheduler(store, InMemorySessions(), model=model, events=sink)
                .schedule(now=T0, session_id="s", force=True))
    fg = within(lambda: forget(store, "terse", now=T0, model=model, events=sink))
    rc = within(lambda: recall(store, "terse answers", now=T0, model=model, events=sink))
    assert len(model.calls) == 4
    for out in (ex, dr, fg, rc):
        assert (out.strategy, out.fallback_reason) == ("heuristic", reason), out
    assert [e.fallback_reason for e in sink.events] == [reason] * 4  # telemetry sees the reason


def test_lone_surrogate_and_deep_answers_through_parse() -> None:
    for text in ('{"a": "\\udc80"}', "{" * 10_000, '{"a": 1' + "0" * 100_000 + "}"):
        with pytest.raises(ModelError) as info:
            within(lambda text=text: parse_json_lenient(text))
        assert info.value.reason == "invalid_json"


def _answer(n: int) -> dict[str, Any]:
    return {"patches": [{"topic": "user", "summary": f"Prefers build option number {i} over the default"}
                        for i in range(n)]}


def _plan_and_apply(n: int) -> float:
    store = InMemoryStore(FixedClock(T0))
    lines = transcript((ChatMessage("user", "I prefer many things"),))
    written: list[str] = []

    def work() -> None:
        patches = plan_by_model(lines, [], model=ScriptedModel.of([_answer(n)]), timeout_s=1.0)
        written.extend(apply_patches(store, patches, [], now=T0))
    elapsed = cpu_seconds(work)
    assert len(written) == n
    return elapsed


@pytest.mark.slow
def test_a_2000_patch_answer_is_linear() -> None:
    # the least disturbed of three runs per size: beside a parallel test run one preempted run is the noise
    small, big = (min(_plan_and_apply(n) for _ in range(3)) for n in (200, 2000))
    assert big < 1.0
    assert big / small < 10 * 2.5  # quadratic would be ~100x; linear is ~10x (slack for a loaded machine)


def test_duplicate_patches_merge_in_one_pass() -> None:
    store = InMemoryStore(FixedClock(T0))
    same = [Patch("user", "Prefers tabs for indentation", why=f"reason {i}" if i == 5 else None) for i in range(2000)]
    written = within(lambda: apply_patches(store, same, [], now=T0))
    assert written == ["user/prefers-tabs-for-indentation.md"]
    assert "Why: reason 5" in store.read(written[0])


def test_model_answers_must_be_mappings() -> None:
    assert isinstance(parse_json_lenient('```json\n{"patches": []}\n```'), Mapping)
