"""A span recorder: the harness's own spans without the OpenTelemetry SDK's per-span lifecycle.

Issue 34: one span through the SDK (start with ~15 attributes, context attach/detach, an event, set_attributes,
status, end) costs 86-93 µs, most of it attribute cleaning, locks and objects made per call; a
``ReadableSpan`` built from plain dicts and handed to the processors costs 5-9 µs. The recorder makes the second:
:class:`RecordingTracer` starts :class:`RecordedSpan` objects (an ``opentelemetry.trace.Span``, so they go into
the OTel context like any span and whatever starts a span under them, the SDK included, parents to them) and on
``end`` hands one ``ReadableSpan`` to the provider's processors. Names, kinds, parents, ids (the same id generator
called in the same order), attributes (cleaned as the SDK cleans them, in its order, with its count limits),
events, status, resource and scope are what the SDK would have exported.

It is used only on the provider ``build_telemetry`` builds (:class:`RecordingTracerProvider`), which keeps its own
list of the processors added to it, and only while every processor is one it knows (its own, the SDK's simple and
batch processors): a provider injected by a caller, a disabled SDK, a sampler other than ALWAYS_ON, a value-length
limit, a span with links at start, or a processor of another kind all take the SDK path, unchanged.
"""

from __future__ import annotations

import contextlib
import logging
import os
import traceback
from collections.abc import Iterator, Mapping, Sequence
from time import time_ns
from types import MappingProxyType, TracebackType
from typing import Any, Final

from opentelemetry import trace
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanLimits, SpanProcessor, TracerProvider, sampling
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.sdk.util import BoundedList
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.util import types

log = logging.getLogger("memharness.telemetry")

_PLAIN: Final = frozenset({str, bool, int, float, bytes, type(None)})
"""Value types the SDK keeps as they are (no length limit configured): no cleaning needed."""
_NO_START: Final = (SimpleSpanProcessor, BatchSpanProcessor)
"""The SDK processors the recorder may feed: their ``on_start`` and ending hooks do nothing."""


def _clean(attributes: Mapping[str, Any]) -> tuple[Mapping[str, Any], int]:
    """``attributes`` as the SDK stores them, and how many it drops (invalid keys): plain values as they are,
    lists and tuples of plain values as tuples; anything else goes through the SDK's public ``BoundedAttributes``."""
    out: dict[str, Any] | None = None
    plain = _PLAIN
    for key, value in attributes.items():
        kind = type(value)
        if kind in plain and type(key) is str and key:
            continue
        if type(key) is str and key and kind in (list, tuple) and all(type(v) in plain for v in value):
            if out is None:
                out = dict(attributes)
            out[key] = tuple(value)
            continue
        cleaned = BoundedAttributes(attributes=attributes, immutable=True)
        return dict(cleaned), cleaned.dropped
    return (attributes if out is None else out), 0


def recorder_safe(processor: SpanProcessor) -> bool:
    """Whether the recorder may feed ``processor``: one of the SDK's export processors, or one that says so
    (``span_recorder_safe``: it reads spans only through the public ``Span``/``ReadableSpan`` API)."""
    return type(processor) in _NO_START or bool(getattr(type(processor), "span_recorder_safe", False))


class RecordingTracerProvider(TracerProvider):
    """The SDK ``TracerProvider`` that ``build_telemetry`` builds: it also keeps, publicly, the processors added to
    it, the span limits it was given and whether the recorder may serve its spans (not when the SDK's own span
    metrics are on: ``OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED``, read from the process environment as the SDK does)."""

    def __init__(self, sampler: sampling.Sampler, *, resource: Resource, id_generator: IdGenerator,
                 span_limits: SpanLimits | None = None, record: bool = True) -> None:
        span_limits = span_limits or SpanLimits()  # from the OTEL_*_LIMIT variables, as the SDK's default
        super().__init__(sampler, resource=resource, shutdown_on_exit=False, id_generator=id_generator,
                         span_limits=span_limits)
        self.span_limits = span_limits
        self.processors: tuple[SpanProcessor, ...] = ()
        self.starters: tuple[SpanProcessor, ...] = ()
        """The processors whose ``on_start`` does something (the SDK's export processors' does nothing)."""
        internal_metrics = os.environ.get("OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED", "").strip().lower() == "true"
        self.recordable = (record and not internal_metrics and sampler is sampling.ALWAYS_ON
                           and span_limits.max_span_attribute_length is None and span_limits.max_attribute_length is None)

    def add_span_processor(self, span_processor: SpanProcessor) -> None:
        super().add_span_processor(span_processor)
        self.processors += (span_processor,)
        if type(span_processor) not in _NO_START:
            self.starters += (span_processor,)
        if not recorder_safe(span_processor):
            self.recordable = False  # from now on every span takes the SDK path


def recording_tracer(provider: Any, name: str, version: str) -> trace.Tracer:
    """A tracer for the harness's own spans: the recorder on a :class:`RecordingTracerProvider` whose SDK is on,
    else the provider's own tracer (an injected provider, a disabled SDK: unchanged)."""
    sdk_tracer: trace.Tracer = provider.get_tracer(name, version)
    if type(provider) is not RecordingTracerProvider or isinstance(sdk_tracer, trace.NoOpTracer):
        return sdk_tracer
    return RecordingTracer(provider, sdk_tracer, InstrumentationScope(name, version, None, None))


class RecordingTracer(trace.Tracer):
    """Starts :class:`RecordedSpan` objects, or hands the call to the SDK tracer when the recorder may not serve it."""

    def __init__(self, provider: RecordingTracerProvider, sdk_tracer: trace.Tracer, scope: InstrumentationScope) -> None:
        self.provider = provider
        self.sdk_tracer = sdk_tracer
        self.scope = scope
        self.info = getattr(sdk_tracer, "instrumentation_info", None)
        self.limits = provider.span_limits

    def start_span(self, name: str, context: Context | None = None, kind: SpanKind = SpanKind.INTERNAL,
                   attributes: types.Attributes = None, links: Sequence[Link] | None = (),
                   start_time: int | None = None, record_exception: bool = True,  # noqa: FBT001, FBT002
                   set_status_on_exception: bool = True) -> trace.Span:  # noqa: FBT001, FBT002  (the API's signature)
        provider = self.provider
        if links or not provider.recordable:
            return self.sdk_tracer.start_span(name, context, kind, attributes, links, start_time, record_exception,
                                              set_status_on_exception)
        ids = provider.id_generator
        parent: SpanContext | None = trace.get_current_span(context).get_span_context()
        if parent is not None and not isinstance(parent, SpanContext):
            raise TypeError("parent_span_context must be a SpanContext or None.")
        if parent is None or not parent.is_valid:  # as the SDK's Tracer.start_span with the ALWAYS_ON sampler
            parent, trace_id, random_id, state = None, ids.generate_trace_id(), ids.is_trace_id_random(), None
        else:
            trace_id, random_id, state = parent.trace_id, parent.trace_flags.random_trace_id, parent.trace_state
        flags = TraceFlags(TraceFlags.SAMPLED | TraceFlags.RANDOM_TRACE_ID) if random_id else _SAMPLED
        span_context = SpanContext(trace_id, ids.generate_span_id(), is_remote=False, trace_flags=flags,
                                   trace_state=state)
        span = RecordedSpan(self, name, span_context, parent, kind, attributes,
                            start_time if start_time is not None else time_ns(), record_exception=record_exception,
                            set_status_on_exception=set_status_on_exception)
        for processor in provider.starters:
            processor.on_start(span, parent_context=context)  # type: ignore[arg-type]  # the public Span API only
        return span

    @contextlib.contextmanager  # the API's own decorator is private
    def start_as_current_span(self, name: str, context: Context | None = None,  # type: ignore[override]
                              kind: SpanKind = SpanKind.INTERNAL,
                              attributes: types.Attributes = None, links: Sequence[Link] | None = (),
                              start_time: int | None = None, record_exception: bool = True,  # noqa: FBT001, FBT002
                              set_status_on_exception: bool = True,  # noqa: FBT001, FBT002
                              end_on_exit: bool = True) -> Iterator[trace.Span]:  # noqa: FBT001, FBT002
        span = self.start_span(name, context, kind, attributes, links, start_time, record_exception,
                               set_status_on_exception)
        with trace.use_span(span, end_on_exit=end_on_exit, record_exception=record_exception,
                            set_status_on_exception=set_status_on_exception) as current:
            yield current


_SAMPLED: Final = TraceFlags(TraceFlags.SAMPLED)
_UNSET: Final = Status(StatusCode.UNSET)


class RecordedSpan(trace.Span):
    """A live span of the recorder: plain dicts and lists until ``end`` makes one ``ReadableSpan`` of them. The
    rules are the SDK ``Span``'s: a key set again moves to the end; past the attribute count limit the oldest is
    dropped (and counted); an OK status is final; nothing changes once ended."""

    __slots__ = ("_attributes", "_context", "_dropped", "_end_time", "_events", "_kind", "_links", "_name", "_parent",
                 "_record_exception", "_set_status_on_exception", "_start_time", "_status", "_tracer")

    def __init__(self, tracer: RecordingTracer, name: str, context: SpanContext, parent: SpanContext | None,
                 kind: SpanKind, attributes: types.Attributes, start_time: int, *, record_exception: bool,
                 set_status_on_exception: bool) -> None:
        self._tracer = tracer
        self._name = name
        self._context = context
        self._parent = parent
        self._kind = kind
        self._start_time = start_time
        self._end_time: int | None = None
        self._attributes: dict[str, Any] = {}
        self._dropped = 0
        self._events: list[Event] = []
        self._links: list[Link] = []
        self._status = _UNSET
        self._record_exception = record_exception
        self._set_status_on_exception = set_status_on_exception
        if attributes:
            self._set_clean(attributes)

    def __repr__(self) -> str:
        return f'{type(self).__name__}(name="{self._name}", context={self._context})'

    @property
    def name(self) -> str:
        return self._name

    @property
    def status(self) -> Status:
        return self._status

    @property
    def attributes(self) -> Mapping[str, Any]:
        return MappingProxyType(self._attributes)

    def get_span_context(self) -> SpanContext:
        return self._context

    def is_recording(self) -> bool:
        return self._end_time is None

    def _ended(self, what: str) -> bool:
        if self._end_time is None:
            return False
        log.warning("telemetry: %s on an ended span (%s)", what, self._name)
        return True

    def _set_clean(self, attributes: Mapping[str, Any]) -> None:
        cleaned, dropped = _clean(attributes)
        self._dropped += dropped
        store, limit = self._attributes, self._tracer.limits.max_span_attributes
        again = cleaned.keys() & store.keys()
        if limit is None or len(store) - len(again) + len(cleaned) <= limit:  # the usual case: nothing dropped
            for key in again:  # a key set again moves to the end
                del store[key]
            store.update(cleaned)
            return
        for key, value in cleaned.items():  # one at a time, as the SDK: what is dropped depends on the order
            if key in store:
                del store[key]
            elif limit is not None and len(store) >= limit:
                if limit == 0:
                    self._dropped += 1
                    continue
                del store[next(iter(store))]
                self._dropped += 1
            store[key] = value

    def set_attributes(self, attributes: Mapping[str, types.AnyValue]) -> None:
        if not self._ended("setting attributes"):
            self._set_clean(attributes)

    def set_attribute(self, key: str, value: types.AnyValue) -> None:
        if self._ended("setting an attribute"):
            return
        if not key or type(key) is not str:  # as the SDK: an invalid key is dropped, not converted
            log.warning("telemetry: invalid attribute key %r dropped", key)
            self._dropped += 1
            return
        self._set_clean({key: value})

    def add_event(self, name: str, attributes: types.Attributes = None, timestamp: int | None = None) -> None:
        if self._ended("adding an event"):
            return
        limit = self._tracer.limits.max_event_attributes
        cleaned: Any = None
        if attributes:
            cleaned, dropped = _clean(attributes)
            if dropped or (limit is not None and len(cleaned) > limit):
                cleaned = BoundedAttributes(limit, attributes, immutable=True)  # what the SDK makes, drops counted
            elif cleaned is attributes:
                cleaned = dict(attributes)  # the caller's mapping is theirs to change
        else:
            cleaned = BoundedAttributes(limit, None, immutable=True)  # an event without attributes, as the SDK has it
        self._events.append(Event(name, cleaned, timestamp))

    def add_link(self, context: SpanContext, attributes: types.Attributes = None) -> None:
        if not (context and (context.is_valid or (attributes or context.trace_state))) or self._ended("adding a link"):
            return
        self._links.append(Link(context, BoundedAttributes(self._tracer.limits.max_link_attributes, attributes,
                                                           immutable=True)))

    def update_name(self, name: str) -> None:
        if not self._ended("renaming"):
            self._name = name

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        if self._ended("setting the status"):
            return
        if isinstance(status, Status):
            if self._status.status_code is StatusCode.OK or status.status_code is StatusCode.UNSET:
                return
            if description is not None:
                log.warning("telemetry: status description %s ignored (the Status has its own)", description)
            self._status = status
        elif isinstance(status, StatusCode):
            if self._status.status_code is StatusCode.OK or status is StatusCode.UNSET:
                return
            self._status = Status(status, description)

    def record_exception(self, exception: BaseException, attributes: types.Attributes = None,
                         timestamp: int | None = None, escaped: bool = False) -> None:  # noqa: FBT001, FBT002
        """An ``exception`` event, as the SDK records one."""
        module, qualname = type(exception).__module__, type(exception).__qualname__
        found: dict[str, Any] = {
            "exception.type": f"{module}.{qualname}" if module and module != "builtins" else qualname,
            "exception.message": str(exception),
            "exception.stacktrace": "".join(traceback.format_exception(exception)),
            "exception.escaped": str(escaped)}
        if attributes:
            found.update(attributes)
        self.add_event("exception", found, timestamp)

    def __exit__(self, exc_type: type[BaseException] | None, exc_val: BaseException | None,
                 exc_tb: TracebackType | None) -> None:
        if exc_val is not None and self.is_recording():
            if self._record_exception:
                self.record_exception(exc_val, escaped=True)
            if self._set_status_on_exception:
                self.set_status(Status(StatusCode.ERROR, f"{type(exc_val).__name__}: {exc_val}"))
        super().__exit__(exc_type, exc_val, exc_tb)

    def end(self, end_time: int | None = None) -> None:
        if self._ended("ending"):
            return
        self._end_time = end_time if end_time is not None else time_ns()
        tracer, limits = self._tracer, self._tracer.limits
        attributes: Any = self._attributes
        if self._dropped:  # only the SDK's container reports a dropped count
            attributes = BoundedAttributes(None, self._attributes, immutable=True)
            attributes.dropped = self._dropped
        events: Sequence[Event] = self._events
        if limits.max_events is not None and len(events) > limits.max_events:
            events = BoundedList.from_seq(limits.max_events, events)
        links: Sequence[Link] = self._links
        if limits.max_links is not None and len(links) > limits.max_links:
            links = BoundedList.from_seq(limits.max_links, links)
        # the provider's resource now: the SDK updates it in a forked child (process-dependent detectors)
        readable = ReadableSpan(name=self._name, context=self._context, parent=self._parent,
                                resource=tracer.provider.resource, attributes=attributes, events=events, links=links,
                                kind=self._kind, instrumentation_info=tracer.info, status=self._status,
                                start_time=self._start_time, end_time=self._end_time, instrumentation_scope=tracer.scope)
        for processor in tracer.provider.processors:
            processor.on_end(readable)

