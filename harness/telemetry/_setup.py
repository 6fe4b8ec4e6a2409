"""Provider wiring for the CLI (the only place that reads ``OTEL_*``), and the OTLP-JSON lines span exporter."""

from __future__ import annotations

import atexit
import json
import logging
import math
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import orjson
from opentelemetry._logs import NoOpLoggerProvider
from opentelemetry.context import Context
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, ConsoleLogRecordExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, sampling
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)

from harness.scenario._envflag import env_flag
from harness.scenario._otel_env import key_value_pairs, resource_overrides, warn_notes
from harness.telemetry import semconv as sc
from harness.telemetry._otlp_json import spans_to_otlp_json
from harness.telemetry._recorder import RecordingTracerProvider
from harness.telemetry._spans import DeterministicIds, Telemetry

log = logging.getLogger("memharness.otel")

OTLP_TIMEOUT_S: Final = 10.0
"""An OTLP request's timeout when ``OTEL_EXPORTER_OTLP_TIMEOUT`` (seconds, as OpenTelemetry Python reads it) is unset."""
MAX_OTLP_TIMEOUT_S: Final = 60.0
"""The largest OTLP timeout taken: a larger value is this. The timeout is also how long the end of a run waits for
the exporters to deliver what is left (the bound on the delay an endpoint that black-holes can cause)."""


def span_to_otlp_json(span: ReadableSpan) -> dict[str, Any]:
    """One span as an OTLP-JSON ``ExportTraceServiceRequest`` object (resource and scope included)."""
    return spans_to_otlp_json([span])


def otlp_jsonl(requests: Iterable[Mapping[str, Any]]) -> str:
    """``traces.jsonl`` text: one OTLP/JSON request per line. A run's spans are the biggest thing it writes, so they
    go through orjson (a tenth of the stdlib encoder's time; issue 19's telemetry budget) with no cleaning pass:
    the encoders make them JSON-safe (ids and 64-bit ints are strings; NaN and the infinities are the strings
    OTLP/JSON uses). A request orjson refuses (an int past 64 bits or a lone surrogate, from a hand-edited run
    merged in) is written by the stdlib encoder with ASCII escapes instead, NaN and the infinities as null as orjson
    writes them."""
    return "".join(otlp_line(request) + "\n" for request in requests)


def otlp_line(request: Mapping[str, Any]) -> str:
    """One ``traces.jsonl`` line (no newline), as :func:`otlp_jsonl` writes it."""
    try:
        return orjson.dumps(request).decode()
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(finite_json(request), separators=(",", ":"))


def finite_json(value: Any) -> Any:
    """``value`` with NaN and the infinities as null, mappings as dicts and tuples as lists: what json.dumps can write
    as valid JSON (it would write ``NaN``). Also what the run directory's other files go through."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(v) for v in value]
    return value


def otlp_spans(requests: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every span of OTLP-JSON requests (``traces.jsonl`` lines: one trace each, or one span in older runs)."""
    return [span for request in requests for rs in request.get("resourceSpans", ())
            for ss in rs.get("scopeSpans", ()) for span in ss.get("spans", ())]


@dataclass
class JsonLinesSpanExporter(SpanExporter):
    """Keeps every finished span; encodes them as OTLP-JSON objects only when taken (after the scenario), so
    ending a span costs a list append, not an encoding."""

    spans: list[ReadableSpan] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._lock:
            self.spans.extend(spans)
        return SpanExportResult.SUCCESS

    def take(self) -> list[dict[str, Any]]:
        """Encode, return and forget the spans kept so far: one OTLP-JSON request per trace (a scenario × strategy,
        DESIGN §3), encoded in one pass — not one request per span, which re-encodes the resource every time."""
        with self._lock:
            taken, self.spans = self.spans, []
        traces: dict[int, list[ReadableSpan]] = {}
        for span in taken:
            traces.setdefault(span.context.trace_id if span.context else 0, []).append(span)
        out = []
        for spans in traces.values():
            try:
                out.append(spans_to_otlp_json(spans))
            except Exception:  # one span the encoder refuses must not cost the trace's other spans
                for span in spans:
                    try:
                        out.append(span_to_otlp_json(span))
                    except Exception:
                        log.warning("telemetry: could not encode a span", exc_info=True)
        return out

    def shutdown(self) -> None:
        return None


_FLUSH_WAITED: dict[str, float] = {}
"""Seconds this process has waited at shutdowns for the exporters, per run id (the per-run budget's use)."""
_FLUSH_WARNED: set[str] = set()


@dataclass
class TelemetrySetup:
    """Providers, the JSONL exporter, and a ``Telemetry`` over them."""

    telemetry: Telemetry
    jsonl: JsonLinesSpanExporter
    readers: list[MetricReader]
    flush_timeout: float | None = None
    """Seconds the shutdowns of one run (every setup of its run id in this process: one per system) wait for the
    exporters in all (an OTLP endpoint's timeout), or None: wait for them to finish (the console and JSONL
    exporters cannot hang)."""
    otlp: list[_Delivery] = field(default_factory=list)
    """The OTLP exporters, each counting the exports its endpoint did not take."""
    closed: bool = field(default=False, init=False)

    def shutdown(self) -> None:
        """Flush and shut down every provider, once (later calls do nothing), waiting at most ``flush_timeout``
        seconds: an OTLP endpoint that never answers delays the run by that much, and what it did not take is
        dropped with one warning (``traces.jsonl`` holds every span). Failures are logged, never raised."""
        if self.closed:
            return
        self.closed = True
        if self.flush_timeout is None:
            self._close_providers()
            return
        run = self.telemetry.run_id
        budget = max(0.0, self.flush_timeout - _FLUSH_WAITED.get(run, 0.0))
        closer = threading.Thread(target=self._close_providers, name="memharness-otlp-flush", daemon=True)
        failed_before = sum(exporter.failed for exporter in self.otlp)
        start = time.monotonic()
        closer.start()
        closer.join(budget)
        _FLUSH_WAITED[run] = _FLUSH_WAITED.get(run, 0.0) + time.monotonic() - start
        # not taken: the wait ran out, or an exporter gave up first (its request timeout is the same number of
        # seconds, so which of the two ends first is a race; the user hears the same line either way)
        dropped = closer.is_alive() or sum(exporter.failed for exporter in self.otlp) > failed_before
        if dropped and run not in _FLUSH_WARNED:
            _FLUSH_WARNED.add(run)
            log.warning("telemetry: the OTLP endpoint did not take the last telemetry within %g s "
                        "(OTEL_EXPORTER_OTLP_TIMEOUT, for the whole run); the rest is dropped, traces.jsonl has "
                        "every span", self.flush_timeout)

    def _close_providers(self) -> None:
        for provider in (self.telemetry.tracer_provider, self.telemetry.meter_provider, self.telemetry.logger_provider):
            try:
                getattr(provider, "shutdown", lambda: None)()  # the no-op providers (nothing read) have none
            except Exception:
                log.warning("telemetry: shutdown failed", exc_info=True)


def otlp_timeout(environ: Mapping[str, str], signal: str = "traces") -> float:
    """The OTLP timeout of one signal in seconds: ``OTEL_EXPORTER_OTLP_<SIGNAL>_TIMEOUT``, else
    ``OTEL_EXPORTER_OTLP_TIMEOUT``, else ``OTLP_TIMEOUT_S``; a value that is no positive finite number is the
    default (with a warning), one above ``MAX_OTLP_TIMEOUT_S`` is that maximum."""
    name = f"OTEL_EXPORTER_OTLP_{signal.upper()}_TIMEOUT"
    if not environ.get(name):
        name = "OTEL_EXPORTER_OTLP_TIMEOUT"
    raw = environ.get(name)
    if not raw:
        return OTLP_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        _warn_once(name, raw, "telemetry: %s=%r is not a positive number of seconds; using %g", OTLP_TIMEOUT_S)
        return OTLP_TIMEOUT_S
    if value > MAX_OTLP_TIMEOUT_S:  # e.g. milliseconds meant: say so, an endpoint that never answers costs this much
        _warn_once(name, raw, "telemetry: %s=%r is above the %g s the harness waits for OTLP at most; using %g",
                   MAX_OTLP_TIMEOUT_S, MAX_OTLP_TIMEOUT_S)
    return min(value, MAX_OTLP_TIMEOUT_S)


_WARNED: set[tuple[str, str]] = set()


def exporters(environ: Mapping[str, str], name: str, default: str) -> frozenset[str]:
    """``OTEL_TRACES_EXPORTER`` and its siblings as OpenTelemetry reads them: a comma-separated list in any case
    (``OTLP``, ``otlp,console``); empty is the default; a name this harness has no exporter for is dropped with a
    warning (never silently: nothing would be exported)."""
    raw = environ.get(name, "")
    kinds = {k.strip().lower() for k in (raw if raw.strip() else default).split(",") if k.strip()}
    if unknown := sorted(kinds - {"otlp", "console", "none"}):
        _warn_once(name, raw, "telemetry: %s=%r: no such exporter (" + ", ".join(unknown)[:80].replace("%", "%%")
                   + "); expected otlp, console or none")
    return frozenset(kinds & {"otlp", "console"})


def _warn_once(name: str, raw: str, message: str, *values: float) -> None:
    """One warning per variable and value, not one per signal reading it (traces, metrics and logs)."""
    if (name, raw) not in _WARNED:
        _WARNED.add((name, raw))
        log.warning(message, name, raw[:40], *values)


def _otlp_kwargs(environ: Mapping[str, str], signal: str) -> dict[str, Any]:
    """Endpoint, headers and timeout for one signal from the standard variables (read from ``environ``, not the
    process environment, so tests and embedding applications control them)."""
    specific = environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT")
    base = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318").rstrip("/")
    kwargs: dict[str, Any] = {"endpoint": specific or f"{base}/v1/{signal}"}
    raw_headers = environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_HEADERS") or environ.get("OTEL_EXPORTER_OTLP_HEADERS")
    if raw_headers:  # decoded as the specification says (the CLI refused a malformed value before any work)
        kwargs["headers"] = key_value_pairs("OTEL_EXPORTER_OTLP_HEADERS", raw_headers)
    kwargs["timeout"] = otlp_timeout(environ, signal)  # always given: the exporter never reads os.environ for it
    return kwargs


class _Delivery:
    """An OTLP exporter that counts the exports it reports as failed (the endpoint did not take the batch); every
    other attribute is the exporter's own, so any processor or reader takes it as the exporter."""

    def __init__(self, exporter: Any) -> None:
        self.exporter = exporter
        self.failed = 0

    def export(self, batch: Any, *args: Any, **kwargs: Any) -> Any:
        result = self.exporter.export(batch, *args, **kwargs)
        if getattr(result, "name", "") == "FAILURE":  # SpanExportResult, LogRecordExportResult, MetricExportResult
            self.failed += 1
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.exporter, name)


def _otlp_exporters(environ: Mapping[str, str]) -> tuple[_Delivery, _Delivery, _Delivery]:
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return (_Delivery(OTLPSpanExporter(**_otlp_kwargs(environ, "traces"))),
            _Delivery(OTLPMetricExporter(**_otlp_kwargs(environ, "metrics"))),
            _Delivery(OTLPLogExporter(**_otlp_kwargs(environ, "logs"))))


class RunAttributes(SpanProcessor):
    """Stamps the run's identity (run id, git commit, CI run id) on every span when it starts (backends such as
    Phoenix keep span attributes but drop resource attributes) and hands every finished span to the JSONL
    exporter: one processor, so a span costs one call each way and no ``SimpleSpanProcessor`` context switch."""

    span_recorder_safe = True  # it uses only the public span API: the span recorder (_recorder.py) may feed it

    def __init__(self, attributes: Mapping[str, str], keep: JsonLinesSpanExporter | None = None) -> None:
        self.attributes = {k: v for k, v in attributes.items() if v}
        self.keep = keep

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        span.set_attributes(self.attributes)

    def on_end(self, span: ReadableSpan) -> None:
        if self.keep is not None and span.context is not None and span.context.trace_flags.sampled:  # as SimpleSpanProcessor did
            self.keep.export((span,))

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


class _OnceFilter(logging.Filter):
    """An exporter that cannot deliver (a dead collector, a traces-only backend answering 405 to logs) says so in
    one warning line per kind of failure, never once per batch; a failed export never fails the run."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        key = f"{record.name}:{str(record.msg)[:60]}"
        if key in self.seen:
            return False
        self.seen.add(key)
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        record.msg = f"telemetry export problem (reported once; the run continues): {record.getMessage()}"
        record.args, record.exc_info, record.exc_text = (), None, None
        return True


_ONCE = _OnceFilter()


def _quiet_exporters() -> None:
    for name in ("opentelemetry.exporter.otlp.proto.http.trace_exporter", "opentelemetry.exporter.otlp.proto.http",
                 "opentelemetry.exporter.otlp.proto.http.metric_exporter", "opentelemetry.exporter.otlp.proto.http._log_exporter",
                 "opentelemetry.sdk._shared_internal", "opentelemetry.sdk.trace.export",
                 "opentelemetry.sdk.metrics._internal.export", "opentelemetry.sdk._logs._internal.export"):
        logger = logging.getLogger(name)
        if _ONCE not in logger.filters:
            logger.addFilter(_ONCE)


def run_attributes(environ: Mapping[str, str], run_id: str, suite: str) -> dict[str, str]:
    """Resource attributes of a run: service name and version, run id, git commit, CI run id, Phoenix project."""
    from harness import __version__

    ci = environ.get("GITHUB_RUN_ID") or environ.get("CI_PIPELINE_ID") or environ.get("BUILD_ID") or ""
    return {"service.name": environ.get("OTEL_SERVICE_NAME", "memharness"), sc.SERVICE_VERSION: __version__,
            sc.RUN_ID: run_id, sc.GIT_COMMIT: environ.get("MEMHARNESS_GIT_COMMIT", ""), sc.CI_RUN_ID: ci,
            sc.OPENINFERENCE_PROJECT: environ.get("MEMHARNESS_PROJECT", suite)}


def build_telemetry(environ: Mapping[str, str], *, extra_span_exporters: Sequence[SpanExporter] = (),
                    metric_readers: Sequence[MetricReader] = (), run_id: str = "",
                    suite: str = "memharness") -> TelemetrySetup:
    """Providers from the standard ``OTEL_*`` variables, plus the always-on JSONL span exporter.

    ``OTEL_TRACES_EXPORTER`` / ``OTEL_METRICS_EXPORTER`` / ``OTEL_LOGS_EXPORTER`` take ``otlp``, ``console`` or
    ``none``. An OTLP endpoint (``OTEL_EXPORTER_OTLP_ENDPOINT`` or the traces one) turns on OTLP/HTTP for TRACES
    only: logs and metrics go over OTLP only when their exporter variable says ``otlp`` (many trace backends,
    Phoenix among them, answer 405 to them). ``OTEL_RESOURCE_ATTRIBUTES`` adds to (and overrides) the run's own
    resource attributes.
    """
    _quiet_exporters()
    warn_notes(environ, lambda note: log.warning("%s", note), run_id=run_id)
    own = run_attributes(environ, run_id, suite)
    resource = Resource.create({k: v for k, v in own.items() if v}).merge(Resource(resource_overrides(environ)))
    ids = DeterministicIds()  # ALWAYS_ON: a run keeps every span, whatever OTEL_TRACES_SAMPLER says (a note says so)
    tracer_provider = RecordingTracerProvider(sampling.ALWAYS_ON, resource=resource, id_generator=ids)  # _recorder.py
    jsonl = JsonLinesSpanExporter()
    tracer_provider.add_span_processor(RunAttributes({k: own[k] for k in (sc.RUN_ID, sc.GIT_COMMIT, sc.CI_RUN_ID)},
                                                     jsonl))
    for exporter in extra_span_exporters:
        tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    endpoint = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    traces = exporters(environ, "OTEL_TRACES_EXPORTER", "otlp" if endpoint else "none")
    metrics_kind = exporters(environ, "OTEL_METRICS_EXPORTER", "none")
    logs_kind = exporters(environ, "OTEL_LOGS_EXPORTER", "none")
    readers = list(metric_readers)
    logger_provider: Any = LoggerProvider(resource=resource, shutdown_on_exit=False)
    log_processors = 0
    otlp: list[_Delivery] = []
    try:
        if "otlp" in traces | metrics_kind | logs_kind:
            span_exp, metric_exp, log_exp = _otlp_exporters(environ)
            if "otlp" in traces:
                tracer_provider.add_span_processor(BatchSpanProcessor(span_exp))  # type: ignore[arg-type]
                otlp.append(span_exp)
            if "otlp" in metrics_kind:
                readers.append(PeriodicExportingMetricReader(metric_exp))  # type: ignore[arg-type]
                otlp.append(metric_exp)
            if "otlp" in logs_kind:
                logger_provider.add_log_record_processor(BatchLogRecordProcessor(log_exp))  # type: ignore[arg-type]
                otlp.append(log_exp)
                log_processors += 1
        if "console" in traces:
            tracer_provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
        if "console" in metrics_kind:
            readers.append(PeriodicExportingMetricReader(ConsoleMetricExporter()))
        if "console" in logs_kind:
            logger_provider.add_log_record_processor(BatchLogRecordProcessor(ConsoleLogRecordExporter()))
            log_processors += 1
    except Exception as exc:  # a broken exporter configuration must not stop the run
        log.warning("telemetry: exporter setup failed (%s); continuing with the JSONL file only", exc)
    # metrics and log records nobody reads are not made at all (issue 19: no per-operation work that is not needed)
    meter_provider: Any = (MeterProvider(resource=resource, metric_readers=readers, shutdown_on_exit=False)
                           if readers else NoOpMeterProvider())
    if not log_processors:
        logger_provider = NoOpLoggerProvider()
    telemetry = Telemetry(tracer_provider, meter_provider, logger_provider, capture_content=env_flag(
        environ, sc.CAPTURE_ENV), ids=ids, run_id=run_id, suite=suite)
    kinds = (traces, metrics_kind, logs_kind)
    flush = max(otlp_timeout(environ, signal) for signal, kind in zip(("traces", "metrics", "logs"), kinds, strict=True)
                if "otlp" in kind) if any("otlp" in kind for kind in kinds) else None
    setup = TelemetrySetup(telemetry, jsonl, readers, flush, otlp)
    if any(kinds) or metric_readers:
        atexit.register(setup.shutdown)  # instead of each provider's own, unbounded, exit hook
    return setup
