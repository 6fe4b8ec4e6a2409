"""Telemetry — OpenTelemetry wiring for replays: spans per memory operation, ``chat`` spans, metrics, log events.

Used by replay; imports no other stage.
"""

from harness.telemetry import semconv
from harness.telemetry._encoded import EncodedTrace, candidate_counts
from harness.telemetry._otlp_json import protobuf_otlp_json, spans_to_otlp_json
from harness.telemetry._otlp_read import checked_lines, otlp_problem, otlp_request
from harness.telemetry._proxied import proxied_call_span
from harness.telemetry._setup import (
    JsonLinesSpanExporter,
    TelemetrySetup,
    build_telemetry,
    exporters,
    finite_json,
    otlp_jsonl,
    otlp_line,
    otlp_spans,
    span_to_otlp_json,
)
from harness.telemetry._spans import DeterministicIds, Operation, Telemetry, TracedModel

__all__ = [
    "DeterministicIds",
    "EncodedTrace",
    "JsonLinesSpanExporter",
    "Operation",
    "Telemetry",
    "TelemetrySetup",
    "TracedModel",
    "build_telemetry",
    "candidate_counts",
    "checked_lines",
    "exporters",
    "finite_json",
    "otlp_jsonl",
    "otlp_line",
    "otlp_problem",
    "otlp_request",
    "otlp_spans",
    "protobuf_otlp_json",
    "proxied_call_span",
    "semconv",
    "span_to_otlp_json",
    "spans_to_otlp_json",
]
