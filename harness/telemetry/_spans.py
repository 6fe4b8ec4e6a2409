"""OpenTelemetry for the memory core: spans per operation, ``chat`` spans per model call, metrics, log events.

Providers are injected (no global ``set_*_provider``). Spans carry real wall-clock start and end times; an
operation span lasts exactly as long as the system's operation, timed with a monotonic clock started after and
stopped before any harness or telemetry work (``Operation.duration_ms`` is the probe's ``duration_ms``). The
scenario's fake time is the ``memory.scenario.time`` attribute. Trace/span ids come from a generator reseeded per
scenario × strategy, so the same replay gives the same span tree. Telemetry failures never fail a run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import random
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry._logs import LoggerProvider, NoOpLoggerProvider
from opentelemetry.metrics import MeterProvider, NoOpMeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from harness.telemetry import semconv as sc
from harness.telemetry._recorder import recording_tracer
from memory_core.clock import monotonic_ms
from memory_core.errors import ModelError
from memory_core.events import DreamEvent, Event, ExtractEvent, ForgetEvent, RecallEvent
from memory_core.model import Model, ModelReply, ModelRequest

log = logging.getLogger("memharness.telemetry")
FAILED_STATUSES = frozenset({"failed"})


class DeterministicIds(IdGenerator):
    """Trace and span ids from a PRNG reseeded per scenario × strategy."""

    def __init__(self) -> None:
        self._rng = random.Random(0)

    def reseed(self, key: str) -> None:
        """Restart the id sequence from ``key``."""
        self._rng = random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))

    def generate_span_id(self) -> int:
        return self._rng.getrandbits(64) or 1

    def generate_trace_id(self) -> int:
        return self._rng.getrandbits(128) or 1


def _fake_time(moment: datetime) -> str:
    return moment.isoformat()


@dataclass
class Operation:
    """One timed memory operation. The span is current while the system runs; ``duration_ms`` is the system's.
    The span stays open after the timed block so the replay can attach what it judged (evaluations, retrieved
    documents, the status) before ``close()`` ends it at start + the measured duration."""

    span: Span
    start_ns: int
    capture: bool = False
    elapsed_ns: int = 0
    errors: list[str] = field(default_factory=list)
    closed: bool = False
    pending: list[Event] = field(default_factory=list)
    """Events the system emitted while timed: turned into attributes, metrics and logs after the timer stops."""

    @property
    def duration_ms(self) -> float:
        return self.elapsed_ns / 1e6

    def evaluate(self, name: str, *, score: float | None = None, label: str | None = None,
                 explanation: str = "") -> None:
        """A ``gen_ai.evaluation.result`` event on the span (semconv: name, score value/label, explanation)."""
        attrs: dict[str, Any] = {sc.EVALUATION_NAME: name}
        if score is not None:
            attrs[sc.EVALUATION_SCORE_VALUE] = float(score)
        if label is not None:
            attrs[sc.EVALUATION_SCORE_LABEL] = label
        if explanation:
            attrs[sc.EVALUATION_EXPLANATION] = explanation
        self.span.add_event(sc.EVALUATION_EVENT, attrs, timestamp=self.start_ns + self.elapsed_ns)
        if label == "fail":
            self.errors.append(explanation or name)

    def facts(self, expected: Sequence[str], covered: Sequence[str]) -> None:
        """Gold fact ids (ids, never content) the operation was judged on."""
        self.span.set_attributes({sc.MEMORY_EXPECTED_FACTS: list(expected), sc.MEMORY_COVERED_FACTS: list(covered)})

    def retrieved(self, ids: Sequence[str], scores: Sequence[float]) -> None:
        """Retrieved documents as OpenInference sees them. Record ids are file names: with content capture off
        they are replaced by a stable digest (the events.py promise), so a backend still sees ranks and scores."""
        attrs: dict[str, Any] = {}
        for i, rid in enumerate(ids):
            shown = rid if self.capture else "sha256:" + hashlib.sha256(rid.encode()).hexdigest()[:16]
            attrs[sc.RETRIEVAL_DOCUMENT_ID.format(i=i)] = shown
            score = scores[i] if i < len(scores) else 1.0 / (i + 1)  # unranked strategies: reciprocal rank
            attrs[sc.RETRIEVAL_DOCUMENT_SCORE.format(i=i)] = float(score)
        self.span.set_attributes(attrs)

    def fail(self, message: str) -> None:
        self.errors.append(message)

    def close(self) -> None:
        """Status (ERROR with the first problem, else OK) and the end time; idempotent."""
        if self.closed:
            return
        self.closed = True
        try:
            current = getattr(self.span, "status", None)
            if self.errors:
                self.span.set_status(Status(StatusCode.ERROR, "; ".join(self.errors)[:1000]))
            elif current is None or current.status_code is not StatusCode.ERROR:  # a failed event already said ERROR
                self.span.set_status(Status(StatusCode.OK))
            self.span.set_attribute(sc.MEMORY_DURATION_REAL_MS, round(self.duration_ms, 3))
        finally:
            self.span.end(end_time=self.start_ns + self.elapsed_ns)


@dataclass
class Telemetry:
    """Spans, metrics and log events for one process; build it with providers (``harness.telemetry.build_telemetry``).
    A no-op meter or logger provider (what ``build_telemetry`` gives when no reader or exporter would see them)
    turns that signal's work off entirely."""

    tracer_provider: TracerProvider
    meter_provider: MeterProvider
    logger_provider: LoggerProvider
    capture_content: bool = False
    ids: DeterministicIds | None = None
    suite: str = "memharness"
    run_id: str = ""
    """Mixed into the trace-id seed, so two runs of the same suite never share span ids in a backend."""
    system: str = ""
    """A system other than the run's first: mixed into the trace-id seed (and put on the root span), so the two
    systems' replays of one scenario never share trace or span ids."""
    fake_now: str = ""
    """The scenario's fake time of the current operation (put on model-call spans too)."""
    _timed: Operation | None = None
    _instruments: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.metrics_on = not isinstance(self.meter_provider, NoOpMeterProvider)
        self.logs_on = not isinstance(self.logger_provider, NoOpLoggerProvider)
        self.tracer = recording_tracer(self.tracer_provider, "memharness", "0.1.0")  # the SDK's on injected providers
        meter = self.meter_provider.get_meter("memharness", "0.1.0")
        self.logger = self.logger_provider.get_logger("memharness", "0.1.0")
        self._instruments = {
            "duration": meter.create_histogram(sc.DURATION_METRIC, unit="s", description="Duration of memory "
                                               "operations and model calls",
                                               explicit_bucket_boundaries_advisory=sc.DURATION_BUCKETS),
            "tokens": meter.create_histogram(sc.TOKEN_METRIC, unit="{token}", description="Tokens used by model calls",
                                             explicit_bucket_boundaries_advisory=sc.TOKEN_BUCKETS),
            "records": meter.create_histogram(sc.RECALL_RECORDS_METRIC, unit="{record}",
                                              explicit_bucket_boundaries_advisory=sc.RECORDS_BUCKETS),
            "candidates": meter.create_histogram(sc.RECALL_CANDIDATES_METRIC, unit="{record}",
                                                 explicit_bucket_boundaries_advisory=sc.CANDIDATES_BUCKETS),
            "changes": meter.create_counter(sc.RECORD_CHANGES_METRIC, unit="{record}"),
            "store_records": meter.create_gauge(sc.STORE_RECORDS_METRIC, unit="{record}",
                                          description="Topic files in the store, by memory type"),
            "store_index": meter.create_gauge(sc.STORE_INDEX_SIZE_METRIC, unit="By", description="MEMORY.md size"),
        }

    # -- spans -------------------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def scenario(self, *, case: str, strategy: str, digest: str, start: datetime) -> Iterator[Span]:
        """The root span of one scenario × strategy (``test.case.name``), with a deterministic trace id. The caller
        sets the verdict (``set_verdict``) before it ends."""
        if self.ids is not None:
            key = f"{self.run_id}|{case}|{strategy}" if self.run_id else f"{case}|{strategy}"
            self.ids.reseed(f"{key}|{self.system}" if self.system else key)
        self.fake_now = _fake_time(start)
        span = self.tracer.start_span(
            f"scenario {case}", kind=SpanKind.INTERNAL, start_time=time.time_ns(),
            attributes={sc.TEST_SUITE_NAME: self.suite, sc.TEST_CASE_NAME: case, sc.MEMORY_SCENARIO_STRATEGY: strategy,
                        sc.MEMORY_SCENARIO_HASH: digest, sc.MEMORY_SCENARIO_TIME: _fake_time(start),
                        sc.OPENINFERENCE_SPAN_KIND: "CHAIN", **({"memory.system": self.system} if self.system else {})},
        )
        with trace.use_span(span, end_on_exit=False):
            try:
                yield span
            finally:
                span.end(end_time=time.time_ns())

    @staticmethod
    def set_verdict(span: Span, status: str, problems: Sequence[str]) -> None:
        """``test.case.result.status`` and the span status: ERROR with the first problems, OK, or (skipped) UNSET."""
        span.set_attribute(sc.TEST_CASE_RESULT, status)
        if status == "fail":
            span.set_status(Status(StatusCode.ERROR, "; ".join(problems)[:1000] or "scenario failed"))
        elif status == "pass":
            span.set_status(Status(StatusCode.OK))

    @contextlib.contextmanager
    def operation(self, op: str, *, step: int, now: datetime, session_id: str = "") -> Iterator[Operation]:
        """One span per memory operation, named by ``gen_ai.operation.name``. The timer covers exactly the body;
        the span stays open until ``Operation.close()`` (the caller's, or here when the body raised)."""
        name = sc.OPERATION_SPAN[op]
        self.fake_now = _fake_time(now)
        attrs: dict[str, Any] = {sc.GEN_AI_OPERATION_NAME: name, sc.MEMORY_OPERATION: op, sc.MEMORY_STEP: step,
                                 sc.MEMORY_SCENARIO_TIME: _fake_time(now),
                                 sc.OPENINFERENCE_SPAN_KIND: "RETRIEVER" if op == "recall" else "CHAIN"}
        if session_id:
            attrs[sc.GEN_AI_CONVERSATION_ID] = session_id
        start_ns = time.time_ns()
        span = self.tracer.start_span(name, kind=SpanKind.INTERNAL, start_time=start_ns, attributes=attrs)
        handle = Operation(span, start_ns, capture=self.capture_content)
        # current while the body runs (use_span(record_exception=False, ...) without its generator frames)
        token = otel_context.attach(trace.set_span_in_context(span))
        try:
            self._timed = handle  # events emitted while timed wait in handle.pending (no telemetry work inside)
            t0 = time.perf_counter_ns()
            try:
                yield handle
                handle.elapsed_ns = time.perf_counter_ns() - t0
            except BaseException as exc:
                handle.elapsed_ns = time.perf_counter_ns() - t0
                self._drain(handle)
                span.set_attribute(sc.ERROR_TYPE, type(exc).__name__)
                handle.fail(f"{type(exc).__name__}: {exc}")
                handle.close()
                raise
            self._drain(handle)
        finally:
            otel_context.detach(token)

    def _drain(self, handle: Operation) -> None:
        """Process the events the system emitted during the timed call, now that the timer has stopped."""
        self._timed = None
        events, handle.pending = handle.pending, []
        for event in events:
            self.emit(event)

    def record_store(self, counts_by_type: dict[str, int], index_bytes: int) -> None:
        """Gauges of the store's state after an operation (never raises)."""
        if not self.metrics_on:
            return
        try:
            for kind, count in counts_by_type.items():
                self._instruments["store_records"].set(count, {"memory.type": kind})
            self._instruments["store_index"].set(index_bytes)
        except Exception:
            log.warning("telemetry: could not record store gauges", exc_info=True)

    def traced(self, model: Model) -> Model:
        """Wrap a model so each call is a ``chat {model}`` child span with usage metrics."""
        return TracedModel(model, self)

    # -- events -> attributes, metrics, logs -------------------------------------------------------------------
    def emit(self, event: Event) -> None:
        """EventSink: annotate the current operation span, record metrics and a log event (never raises). During
        an operation's timed call the event is only queued: the work happens after the timer stops."""
        if self._timed is not None:
            self._timed.pending.append(event)
            return
        try:
            self._emit(event)
        except Exception:  # telemetry never fails a run; one line, no traceback (round 18: a plug-in's emit(None))
            log.warning("telemetry: could not record an event the system emitted (not a well-formed memory event)")

    def _emit(self, event: Event) -> None:
        span = trace.get_current_span()
        attrs, body, op = _event_attributes(event, capture=self.capture_content)
        span.set_attributes(attrs)
        status = getattr(event, "status", "completed")
        error_type = None
        if status in FAILED_STATUSES:
            error = getattr(event, "error", None) or "failed"
            error_type = error.split(":", 1)[0]
            span.set_attribute(sc.ERROR_TYPE, error_type)
            span.set_status(Status(StatusCode.ERROR, error))
        if self.metrics_on:
            self._metrics(event, op, status, error_type)
        if self.logs_on:
            self.logger.emit(event_name=f"memory.{op}", body=body, attributes={
                "event.name": event.name, "session.id": event.session_id,
                **{k: v for k, v in attrs.items() if not isinstance(v, tuple)}})

    def _metrics(self, event: Event, op: str, status: str, error_type: str | None) -> None:
        metric_attrs: dict[str, Any] = {sc.GEN_AI_OPERATION_NAME: sc.OPERATION_SPAN[op], sc.MEMORY_OPERATION: op,
                                        sc.MEMORY_STATUS: status}
        if error_type is not None:
            metric_attrs[sc.ERROR_TYPE] = error_type
        if isinstance(event, RecallEvent):
            metric_attrs[sc.MEMORY_RECALL_STRATEGY] = event.strategy
            self._instruments["records"].record(event.docs_selected, {sc.MEMORY_RECALL_STRATEGY: event.strategy})
            self._instruments["candidates"].record(event.docs_scanned, {sc.MEMORY_RECALL_STRATEGY: event.strategy})
        self._instruments["duration"].record(event.duration_ms / 1000, metric_attrs)
        for change, count in _changes(event):
            self._instruments["changes"].add(count, {sc.MEMORY_OPERATION: op, "memory.change": change})


def _event_attributes(event: Event, *, capture: bool) -> tuple[dict[str, Any], str, str]:
    common: dict[str, Any] = {sc.MEMORY_STRATEGY: event.strategy}
    if event.fallback_reason:
        common[sc.MEMORY_FALLBACK_REASON] = event.fallback_reason
    if isinstance(event, RecallEvent):
        attrs = {**common, sc.MEMORY_RECALL_STRATEGY: event.strategy, sc.MEMORY_RECALL_CANDIDATES: event.docs_scanned,
                 sc.MEMORY_RECALL_QUERY_LENGTH: event.query_length, sc.GEN_AI_MEMORY_RECORD_COUNT: event.docs_selected}
        if capture:  # record ids are content (file names): only with capture on (events.py promise)
            attrs[sc.MEMORY_RECALL_RECORD_IDS] = event.selected
        if event.top_score is not None:
            attrs[sc.MEMORY_RECALL_TOP_SCORE] = event.top_score
        body = f"Memory recall: strategy={event.strategy}. Selected {event.docs_selected}/{event.docs_scanned} docs."
        return attrs, body, "recall"
    if isinstance(event, ForgetEvent):
        attrs = {**common, sc.MEMORY_FORGET_CANDIDATES: event.candidates,
                 sc.MEMORY_RECORDS_DELETED: event.removed_entries, sc.GEN_AI_MEMORY_RECORD_COUNT: event.removed_entries,
                 sc.MEMORY_TOPICS_TOUCHED: event.touched_topics}
        return attrs, f"Memory forget: removed {event.removed_entries}/{event.candidates} entries.", "forget"
    topics = ", ".join(event.touched_topics) or "none"
    attrs = {**common, sc.MEMORY_STATUS: event.status, sc.MEMORY_TRIGGER: event.trigger,
             sc.MEMORY_TOPICS_TOUCHED: event.touched_topics}
    if event.skipped_reason:
        attrs[sc.MEMORY_SKIPPED_REASON] = event.skipped_reason
    if isinstance(event, ExtractEvent):
        attrs[sc.MEMORY_PATCHES] = event.patches_count
        attrs[sc.GEN_AI_MEMORY_RECORD_COUNT] = event.patches_count
        return attrs, f"Memory extract: {event.status}. Patches: {event.patches_count}. Topics: {topics}.", "extract"
    assert isinstance(event, DreamEvent)
    attrs[sc.MEMORY_DREAM_DEDUPED] = event.deduped_entries
    attrs[sc.GEN_AI_MEMORY_RECORD_COUNT] = event.deduped_entries
    return attrs, f"Memory dream: {event.status}. Deduped: {event.deduped_entries}. Topics: {topics}.", "dream"


def _changes(event: Event) -> list[tuple[str, int]]:
    if isinstance(event, ForgetEvent) and event.removed_entries:
        return [("deleted", event.removed_entries)]
    if isinstance(event, DreamEvent) and event.deduped_entries:
        return [("deduped", event.deduped_entries)]
    if isinstance(event, ExtractEvent) and event.patches_count and event.status == "completed":
        return [("created", event.patches_count)]
    return []


@dataclass
class TracedModel:
    """A ``Model`` whose calls become ``chat {model}`` CLIENT spans plus token and duration metrics."""

    inner: Model
    telemetry: Telemetry

    @property
    def name(self) -> str:
        return self.inner.name

    def query(self, request: ModelRequest) -> ModelReply:
        t = self.telemetry
        provider = self.inner.name.split("/", 1)[0] if "/" in self.inner.name else "unknown"
        attrs: dict[str, Any] = {sc.GEN_AI_OPERATION_NAME: "chat", sc.OPENINFERENCE_SPAN_KIND: "LLM",
                                 sc.MEMORY_SCENARIO_TIME: t.fake_now,
                                 sc.GEN_AI_REQUEST_MODEL: self.inner.name,
                                 sc.GEN_AI_PROVIDER_NAME: provider, sc.MEMORY_LLM_PURPOSE: request.purpose,
                                 sc.MEMORY_PROMPT_VERSION: request.prompt_version}
        if t.capture_content:
            attrs["gen_ai.input.messages"] = json.dumps([{"role": m.role, "content": m.content}
                                                         for m in request.messages])
        start_ns = time.time_ns()
        span = t.tracer.start_span(f"chat {self.inner.name}", kind=SpanKind.CLIENT, start_time=start_ns,
                                   attributes=attrs)
        t0 = monotonic_ms()
        try:
            with trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
                reply = self.inner.query(request)
            span.set_attributes({sc.GEN_AI_RESPONSE_MODEL: reply.model, sc.GEN_AI_USAGE_INPUT: reply.input_tokens,
                                 sc.GEN_AI_USAGE_OUTPUT: reply.output_tokens, sc.MEMORY_LLM_REPLAYED: reply.replayed})
            span.set_status(Status(StatusCode.OK))
        except ModelError as exc:
            span.set_attribute(sc.ERROR_TYPE, exc.reason)
            span.set_status(Status(StatusCode.ERROR, str(exc)))
            self._safe_metric(monotonic_ms() - t0, attrs, exc.reason, None)
            raise
        finally:
            elapsed = monotonic_ms() - t0
            span.set_attribute(sc.MEMORY_DURATION_REAL_MS, round(elapsed, 3))
            span.end(end_time=start_ns + int(elapsed * 1e6))
        self._safe_metric(reply.latency_ms, attrs, None, reply)
        return reply

    def _safe_metric(self, ms: float, attrs: dict[str, Any], error: str | None, reply: ModelReply | None) -> None:
        if not self.telemetry.metrics_on:
            return
        try:
            base = {k: attrs[k] for k in (sc.GEN_AI_OPERATION_NAME, sc.GEN_AI_REQUEST_MODEL, sc.GEN_AI_PROVIDER_NAME)}
            self.telemetry._instruments["duration"].record(ms / 1000, {**base, **({sc.ERROR_TYPE: error} if error else {})})
            if reply is not None:
                for kind, count in (("input", reply.input_tokens), ("output", reply.output_tokens)):
                    self.telemetry._instruments["tokens"].record(count, {**base, sc.GEN_AI_TOKEN_TYPE: kind})
        except Exception:
            log.warning("telemetry: could not record model metrics", exc_info=True)
