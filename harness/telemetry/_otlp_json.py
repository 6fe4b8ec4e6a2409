"""Finished spans as OTLP/JSON, written straight from the SDK's ``ReadableSpan`` objects.

The same objects ``encode_spans`` (opentelemetry-exporter-otlp-proto-common) and protobuf's ``MessageToDict`` give,
with ids in hex as OTLP/JSON wants — but without building protobuf messages and walking them back into dicts,
which was two thirds of what exporting a run's spans cost (bench/bench_telemetry.py). Equality with the protobuf
path is tested on every span of a full run (tests/harness/test_otlp_export.py); a value this encoder does not
know (anything outside the OTel attribute types) sends the whole batch through the protobuf path instead.
"""

from __future__ import annotations

import base64
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext, SpanKind

_KIND = {SpanKind.INTERNAL: "SPAN_KIND_INTERNAL", SpanKind.SERVER: "SPAN_KIND_SERVER",
         SpanKind.CLIENT: "SPAN_KIND_CLIENT", SpanKind.PRODUCER: "SPAN_KIND_PRODUCER",
         SpanKind.CONSUMER: "SPAN_KIND_CONSUMER"}
_STATUS = {1: "STATUS_CODE_OK", 2: "STATUS_CODE_ERROR"}
_HAS_IS_REMOTE, _IS_REMOTE = 0x100, 0x200
_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


class _Unsupported(TypeError):
    """A value only the protobuf path knows how to encode."""


def spans_to_otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """Spans as one OTLP/JSON ``ExportTraceServiceRequest`` (grouped by resource, then instrumentation scope)."""
    try:
        return _direct(spans)
    except _Unsupported:
        return protobuf_otlp_json(spans)


def protobuf_otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """The reference path: ``encode_spans`` + ``MessageToDict``, ids turned from base64 into hex."""
    request: dict[str, Any] = MessageToDict(encode_spans(spans))
    for rs in request.get("resourceSpans", ()):
        for ss in rs.get("scopeSpans", ()):
            for span in ss.get("spans", ()):
                _hex_fields(span)
                for link in span.get("links", ()):
                    _hex_fields(link)
    return request


def _hex_fields(node: dict[str, Any]) -> None:
    for key in _ID_FIELDS:
        value = node.get(key)
        if isinstance(value, str):
            node[key] = base64.b64decode(value).hex()


def _direct(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    # grouped by the resource object's identity first: ``Resource.__hash__`` serialises every attribute to JSON,
    # once per span; equal resources that are distinct objects still merge below, as encode_spans merges them
    by_id: dict[int, tuple[Any, dict[Any, list[dict[str, Any]]]]] = {}
    for span in spans:
        resource = span.resource
        if id(resource) not in by_id:
            by_id[id(resource)] = (resource, defaultdict(list))
        by_id[id(resource)][1][span.instrumentation_scope or None].append(_span(span))
    groups = list(by_id.values())
    if len(groups) > 1:  # distinct but equal resources merge (the usual single resource is never hashed)
        merged: dict[Any, dict[Any, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
        for resource, scoped in groups:
            for scope, encoded in scoped.items():
                merged[resource][scope].extend(encoded)
        groups = list(merged.items())
    resource_spans = []
    for resource, scopes in groups:
        scope_spans = []
        for scope, encoded in scopes.items():
            entry: dict[str, Any] = {"scope": _scope(scope), "spans": encoded}
            if scope is not None and scope.schema_url:
                entry["schemaUrl"] = scope.schema_url
            scope_spans.append(entry)
        rs: dict[str, Any] = {"resource": _with_attributes({}, resource.attributes), "scopeSpans": scope_spans}
        if resource.schema_url:
            rs["schemaUrl"] = resource.schema_url
        resource_spans.append(rs)
    return {"resourceSpans": resource_spans} if resource_spans else {}


def _scope(scope: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if scope is None:
        return out
    if scope.name:
        out["name"] = scope.name
    if scope.version:
        out["version"] = scope.version
    return _with_attributes(out, scope.attributes)


def _span(span: ReadableSpan) -> dict[str, Any]:
    context = span.get_span_context()
    assert context is not None
    out: dict[str, Any] = {"traceId": f"{context.trace_id:032x}", "spanId": f"{context.span_id:016x}"}
    if context.trace_state:
        out["traceState"] = ",".join(f"{k}={v}" for k, v in context.trace_state.items())
    if span.parent is not None:
        out["parentSpanId"] = f"{span.parent.span_id:016x}"
    if span.name:
        out["name"] = span.name
    out["kind"] = _KIND[span.kind]
    if span.start_time:
        out["startTimeUnixNano"] = str(span.start_time)
    if span.end_time:
        out["endTimeUnixNano"] = str(span.end_time)
    _with_attributes(out, span.attributes)
    if span.dropped_attributes:
        out["droppedAttributesCount"] = span.dropped_attributes
    if span.events:
        out["events"] = [_event(e) for e in span.events]
    if span.dropped_events:
        out["droppedEventsCount"] = span.dropped_events
    if span.links:
        out["links"] = [_link(link) for link in span.links]
    if span.dropped_links:
        out["droppedLinksCount"] = span.dropped_links
    if span.status is not None:
        status: dict[str, Any] = {}
        if span.status.description:
            status["message"] = span.status.description
        if span.status.status_code.value in _STATUS:
            status["code"] = _STATUS[span.status.status_code.value]
        out["status"] = status
    out["flags"] = _flags(span.parent)
    return out


def _event(event: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if event.timestamp:
        out["timeUnixNano"] = str(event.timestamp)
    if event.name:
        out["name"] = event.name
    _with_attributes(out, event.attributes)
    if event.dropped_attributes:
        out["droppedAttributesCount"] = event.dropped_attributes
    return out


def _link(link: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"traceId": f"{link.context.trace_id:032x}", "spanId": f"{link.context.span_id:016x}"}
    _with_attributes(out, link.attributes)
    if link.dropped_attributes:
        out["droppedAttributesCount"] = link.dropped_attributes
    out["flags"] = _flags(link.context)
    return out


def _flags(parent: SpanContext | None) -> int:
    return _HAS_IS_REMOTE | (_IS_REMOTE if parent is not None and parent.is_remote else 0)


def _with_attributes(out: dict[str, Any], attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    if attributes:
        # the SDK hands out a read-only view of its BoundedAttributes, whose items() steps through Python per key;
        # its copy() is a plain dict. Strings, most values, skip the type dispatch.
        plain = attributes.copy() if hasattr(attributes, "copy") else attributes
        out["attributes"] = [{"key": key, "value": {"stringValue": value} if type(value) is str else _value(value)}
                             for key, value in plain.items()]
    return out


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            raise _Unsupported("int outside int64")  # protobuf drops such an attribute: keep its behaviour
        return {"intValue": str(int(value))}
    if isinstance(value, float):
        if math.isnan(value):
            return {"doubleValue": "NaN"}
        if math.isinf(value):
            return {"doubleValue": "Infinity" if value > 0 else "-Infinity"}
        return {"doubleValue": value}
    if isinstance(value, (tuple, list)):
        values = [_value(v) for v in value]
        return {"arrayValue": {"values": values} if values else {}}
    raise _Unsupported(type(value).__name__)
