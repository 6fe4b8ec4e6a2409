"""The span recorder (harness/telemetry/_recorder.py) against the SDK path it replaces: the same replay through
``build_telemetry``'s provider (the recorder) and through an injected SDK provider (the SDK's span lifecycle) must
export the same spans, times aside, and a processor must see the same calls."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry._logs import NoOpLoggerProvider
from opentelemetry.context import Context
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, SpanProcessor, TracerProvider, sampling
from opentelemetry.sdk.trace import Span as SdkSpan
from opentelemetry.trace import SpanKind, Status, StatusCode

from harness.replay import replay, scripted_model
from harness.scenario import load_scenario
from harness.telemetry import DeterministicIds, JsonLinesSpanExporter, Telemetry, build_telemetry
from harness.telemetry._recorder import RecordedSpan, RecordingTracer, RecordingTracerProvider
from harness.telemetry._setup import RunAttributes
from tests.harness.conftest import SCENARIOS
from tests.harness.test_replay_telemetry import LIFECYCLE


class Spy(SpanProcessor):
    """What a processor is shown: the span at start (its attributes then, its parent context) and the finished one."""

    span_recorder_safe = True

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []
        self.spans: list[ReadableSpan] = []

    def on_start(self, span: Any, parent_context: Context | None = None) -> None:
        parent = trace.get_current_span(parent_context).get_span_context()
        self.seen.append(("start", (span.name, dict(span.attributes), span.is_recording(), parent.span_id,
                                    span.get_span_context().span_id)))

    def on_end(self, span: ReadableSpan) -> None:
        self.seen.append(("end", _readable(span)))
        self.spans.append(span)


def _readable(span: ReadableSpan, *, times: bool = False) -> dict[str, Any]:
    return {"type": type(span).__name__, "name": span.name, "kind": span.kind, "context": span.context,
            "parent": span.parent, "attributes": {k: ("<t>" if k == "memory.duration_ms" and not times else v)
                                                  for k, v in (span.attributes or {}).items()},
            "attribute order": list(span.attributes or {}), "dropped": (span.dropped_attributes, span.dropped_events,
                                                                 span.dropped_links),
            "events": [(e.name, dict(e.attributes or {}), e.timestamp if times else None) for e in span.events],
            "links": [(link.context, dict(link.attributes or {})) for link in span.links],
            "status": (span.status.status_code, span.status.description), "resource": span.resource.attributes,
            "scope": span.instrumentation_scope, "times": (span.start_time, span.end_time) if times else None}


def _untimed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: ("<t>" if k.endswith("UnixNano") or (k == "value" and value.get("key") == "memory.duration_ms")
                     else _untimed(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _pair(run_id: str) -> tuple[Telemetry, JsonLinesSpanExporter, Spy, Telemetry, JsonLinesSpanExporter, Spy]:
    """The recorder's telemetry (build_telemetry's) and an injected SDK provider's, alike in everything else."""
    setup = build_telemetry({}, run_id=run_id, suite="rec")
    recorded_spy = Spy()
    setup.telemetry.tracer_provider.add_span_processor(recorded_spy)
    assert isinstance(setup.telemetry.tracer, RecordingTracer)
    ids = DeterministicIds()
    sdk = TracerProvider(sampling.ALWAYS_ON, resource=setup.telemetry.tracer_provider.resource, id_generator=ids,
                         shutdown_on_exit=False)
    jsonl, sdk_spy = JsonLinesSpanExporter(), Spy()
    assert isinstance(setup.telemetry.tracer_provider, RecordingTracerProvider)
    run = next(p for p in setup.telemetry.tracer_provider.processors if isinstance(p, RunAttributes))
    sdk.add_span_processor(RunAttributes(run.attributes, jsonl))
    sdk.add_span_processor(sdk_spy)
    injected = Telemetry(sdk, NoOpMeterProvider(), NoOpLoggerProvider(), ids=ids, run_id=run_id, suite="rec")
    assert not isinstance(injected.tracer, RecordingTracer)
    return setup.telemetry, setup.jsonl, recorded_spy, injected, jsonl, sdk_spy


@pytest.mark.parametrize("strategy", ["model", "heuristic"])
def test_a_replay_exports_the_same_spans_through_the_recorder_and_the_sdk(tmp_path: Path, strategy: str) -> None:
    path = tmp_path / "life.yaml"
    path.write_text(LIFECYCLE, encoding="utf-8")
    scenarios = [load_scenario(path), load_scenario(SCENARIOS / "dream" / "cross-file-dedupe.yaml")]
    recorded, recorded_jsonl, recorded_spy, injected, injected_jsonl, injected_spy = _pair("rec17")
    for telemetry in (recorded, injected):
        for scenario in scenarios:  # a timeout, a fallback and an empty answer: ERROR chat spans, failed verdicts
            model = scripted_model([{"error": "timeout", "message": "5 s elapsed"}, {"operations": []},
                                    {"selected_memories": ["nope.md"]}, {"selectedCandidateIds": []}])
            replay(scenario, strategy=strategy, telemetry=telemetry, model=model if strategy == "model" else None)
    a, b = recorded_jsonl.take(), injected_jsonl.take()
    assert _untimed(a) == _untimed(b)
    spans = [span for request in a for rs in request["resourceSpans"] for ss in rs["scopeSpans"]
             for span in ss["spans"]]
    assert len(spans) >= 7
    if strategy == "model":  # model spans are children of the operation spans, the recorder's
        by_id = {span["spanId"]: span for span in spans}
        chats = [span for span in spans if span["name"] == "chat scripted"]
        assert chats
        assert all(by_id[chat["parentSpanId"]]["name"].endswith("_memory") for chat in chats)
    assert recorded_spy.seen == injected_spy.seen
    assert [kind for kind, _ in recorded_spy.seen].count("end") == len(spans)


def test_span_rules_match_the_sdk_at_the_edges() -> None:
    """Limits, cleaning, re-set keys, status rules, writes after the end, events, links, exceptions, renames."""
    limits = SpanLimits(max_span_attributes=6, max_events=2, max_event_attributes=2, max_links=1)
    ids_a, ids_b = DeterministicIds(), DeterministicIds()
    recorder = RecordingTracerProvider(sampling.ALWAYS_ON, resource=build_telemetry({}).telemetry.tracer_provider.resource,
                                       id_generator=ids_a, span_limits=limits)
    sdk = TracerProvider(sampling.ALWAYS_ON, resource=recorder.resource, id_generator=ids_b, span_limits=limits,
                         shutdown_on_exit=False)
    spies = Spy(), Spy()
    recorder.add_span_processor(spies[0])
    sdk.add_span_processor(spies[1])
    for provider in (recorder, sdk):
        tracer = Telemetry(provider, NoOpMeterProvider(), NoOpLoggerProvider()).tracer
        unclean: Any = {"a": 1, "list": ["x", "y"], "path": Path("/p"), "": "bad", "n": None}  # a Path: str() of it
        root = tracer.start_span("root", kind=SpanKind.SERVER, start_time=10, attributes=unclean)
        with trace.use_span(root, end_on_exit=False):
            nested: Any = {"nested": [Path("/q"), 2.5]}
            child = tracer.start_span("child", start_time=11, attributes=nested)
            other = tracer.start_span("other", start_time=11, links=[trace.Link(root.get_span_context())])
        full = tracer.start_span("full", start_time=11, attributes={f"k{i}": i for i in range(6)})
        full.set_attributes({"new": 1, "k0": 2})  # "new" drops k0, then k0 drops k1: one key at a time, as the SDK
        full.set_attributes({"k3": 9, "x": 1})  # full: k3 moves to the end, dropping nothing; x drops the oldest
        full.end(end_time=12)
        root.set_attribute("a", 2)  # re-set: moves to the end
        root.set_attributes({"b": True, "c": (1, 2), "d": b"x", "e": 3.5, "f": "g"})  # past 6: the oldest dropped
        root.set_attribute("", 1)
        root.add_event("one", {"k": 1, "l": [1, 2], "m": "x"}, timestamp=12)  # past 2 attributes
        root.add_event("two", timestamp=13)
        root.record_exception(ValueError("boom"), {"extra": 1}, timestamp=14)  # past 2 events
        root.add_link(child.get_span_context(), {"why": "because"})
        root.add_link(other.get_span_context())  # past 1 link
        root.update_name("renamed root")
        root.set_status(Status(StatusCode.ERROR, "first"))
        root.set_status(StatusCode.UNSET)  # ignored
        child.set_status(StatusCode.OK)
        child.set_status(Status(StatusCode.ERROR, "after OK: ignored"))
        other.end(end_time=15)
        child.end(end_time=16)
        root.end(end_time=17)
        root.set_attribute("late", 1)  # ignored after the end
        root.end(end_time=18)  # ignored
    a, b = spies
    assert isinstance(root, SdkSpan)  # the last round's: the SDK's own
    assert all(isinstance(s, ReadableSpan) and not isinstance(s, SdkSpan) for s in a.spans)
    assert [kind for kind, _ in a.seen] == ["start"] * 4 + ["end"] * 4
    assert [s for s in a.seen] == [s for s in b.seen]
    ended = [value for kind, value in a.seen if kind == "end"]
    assert ended[0]["dropped"][0] == 3
    assert ended[3]["dropped"][0] > 0
    assert ended[3]["name"] == "renamed root"


def test_a_span_with_timed_events_matches_the_sdk_exactly() -> None:
    """Times included: the recorder keeps the caller's start, end and event times as the SDK does."""
    resource = build_telemetry({}).telemetry.tracer_provider.resource
    readable: list[list[dict[str, Any]]] = []
    for provider in (RecordingTracerProvider(sampling.ALWAYS_ON, resource=resource, id_generator=DeterministicIds()),
                     TracerProvider(sampling.ALWAYS_ON, resource=resource, id_generator=DeterministicIds(),
                                    shutdown_on_exit=False)):
        spy = Spy()
        provider.add_span_processor(spy)
        span = Telemetry(provider, NoOpMeterProvider(), NoOpLoggerProvider()).tracer.start_span("s", start_time=5)
        span.add_event("e", {"x": 1}, timestamp=6)
        span.end(end_time=7)
        readable.append([_readable(s, times=True) for s in spy.spans])
    assert readable[0] == readable[1]
    assert readable[0][0]["times"] == (5, 7)


def test_the_sdk_path_is_kept_when_the_recorder_may_not_serve(monkeypatch: pytest.MonkeyPatch) -> None:
    setup = build_telemetry({})
    assert isinstance(setup.telemetry.tracer, RecordingTracer)
    assert isinstance(setup.telemetry.tracer.start_span("recorded"), RecordedSpan)

    class Unknown(SpanProcessor):
        pass

    setup.telemetry.tracer_provider.add_span_processor(Unknown())  # its _on_ending is the SDK's business
    assert isinstance(setup.telemetry.tracer.start_span("sdk"), SdkSpan)
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert isinstance(build_telemetry({}).telemetry.tracer, trace.NoOpTracer)
    monkeypatch.setenv("OTEL_SDK_DISABLED", "false")
    monkeypatch.setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "10")  # truncation: the SDK's to do
    assert isinstance(build_telemetry({}).telemetry.tracer.start_span("long"), SdkSpan)
