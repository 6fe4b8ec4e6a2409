"""One ``traces.jsonl`` line checked as read: the one check ``traces push`` and every reader of a run directory
(``report``, ``compare``, ``merge``: ``read_run``) use, so a damaged line is ``<file>:<line>: <field>: <problem>``
wherever it is read, never an internal error in the report's waterfall (the tenth blind probe: an attribute's
``value`` written as 1.5 broke ``report`` with ``AttributeError``).

Two parts: the fields the readers read have the shapes they read them with (ids, names, times, attributes' keys and
values, the lists they walk) — which the protobuf mapping leaves open (a ``null`` clears a field, a missing id is
its default) — and, for ``traces push``, the line parses as an OTLP ``ExportTraceServiceRequest`` (protobuf's own
``ParseDict``: what a backend would accept)."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from typing import Any

ID_FIELDS = ("traceId", "spanId", "parentSpanId")
_ID_DIGITS = {"traceId": 32, "spanId": 16, "parentSpanId": 16}
_HEX = re.compile(r"[0-9a-f]*")
_PARSE = re.compile(r"Failed to parse (\w+) field: ")


def b64_ids(node: Any) -> Any:
    """traces.jsonl holds hex ids (OTLP/JSON); protobuf's JSON mapping wants base64."""
    if isinstance(node, dict):
        return {k: (base64.b64encode(bytes.fromhex(v)).decode() if k in ID_FIELDS and isinstance(v, str) and v
                    else b64_ids(v)) for k, v in node.items()}
    if isinstance(node, list):
        return [b64_ids(v) for v in node]
    return node


def otlp_request(line: Mapping[str, Any]) -> Any:
    """The line as a protobuf ``ExportTraceServiceRequest`` (raises what ``ParseDict`` raises)."""
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    ParseDict(b64_ids(dict(line)), request)
    return request


def otlp_problem(line: Mapping[str, Any], *, protobuf: bool = False) -> str | None:
    """``field: problem`` for the first thing wrong with one ``traces.jsonl`` line; None when every span is one the
    readers can take. ``protobuf``: also one an OTLP backend takes (``traces push``; protobuf's ``ParseDict`` costs
    about 100 times the shape check, ~0.3 s per MB of traces, so a run read back for a report is not parsed so)."""
    if (problem := _shape_problem(line)) is not None or not protobuf:
        return problem
    try:
        otlp_request(line)
    except RecursionError:
        return "resourceSpans: not OTLP-JSON spans (nested too deeply)"
    except Exception as exc:  # ParseError, or ValueError from a bad hex id; the fields it names, outermost first
        text = str(exc)
        fields = _PARSE.findall(text)
        detail = _PARSE.sub("", text).rstrip(".") or type(exc).__name__
        return f"{'.'.join(fields) or 'resourceSpans'}: not OTLP-JSON spans ({_short(detail)})"
    return None


def checked_lines(path: Any, numbered: list[tuple[int, dict[str, Any]]], *, protobuf: bool = False) -> list[dict[str, Any]]:
    """The lines of a ``traces.jsonl``, each checked by ``otlp_problem``, and no span on two lines (or twice on one):
    fix (round 12): a line written twice was read silently — the report drew its trace twice and ``traces push``
    sent its spans twice. A problem is ``HarnessError("<path>:<line>: <field>: <problem>")``."""
    from harness.errors import HarnessError

    seen: dict[tuple[str, str], int] = {}
    for n, line in numbered:
        if (problem := otlp_problem(line, protobuf=protobuf)) is not None:
            raise HarnessError(f"{path}:{n}: {problem}")
        for i, rs in enumerate(line.get("resourceSpans", [])):
            for j, ss in enumerate(rs.get("scopeSpans", [])):
                for k, span in enumerate(ss.get("spans", [])):
                    key = (span["traceId"], span["spanId"])
                    if key in seen:
                        raise HarnessError(f"{path}:{n}: resourceSpans[{i}].scopeSpans[{j}].spans[{k}].spanId: span "
                                           f"{key[1]} of trace {key[0]} is written twice (lines {seen[key]} and {n})")
                    seen[key] = n
    return [line for _, line in numbered]


def _shape_problem(line: Mapping[str, Any]) -> str | None:
    """The lists the readers walk are lists of objects (a null, which ParseDict reads as "not set", is not)."""
    for i, rs in enumerate(_items(line, "resourceSpans", "resourceSpans")):
        if isinstance(rs, str):
            return rs
        for j, ss in enumerate(_items(rs, "scopeSpans", f"resourceSpans[{i}].scopeSpans")):
            if isinstance(ss, str):
                return ss
            for k, span in enumerate(_items(ss, "spans", f"resourceSpans[{i}].scopeSpans[{j}].spans")):
                if isinstance(span, str):
                    return span
                if (problem := _span_problem(span)) is not None:
                    return f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}].{problem}"
    return None


def _items(node: Mapping[str, Any], key: str, where: str) -> list[Any]:
    """The objects of ``node[key]`` (none when absent), or one ``field: problem`` string when it is no such list."""
    value = node.get(key, [])
    if not isinstance(value, list):
        return [f"{where}: expected a list, got {_shown(value)}"]
    for n, item in enumerate(value):
        if not isinstance(item, dict):
            return [f"{where}[{n}]: expected an object, got {_shown(item)}"]
    return value


def _span_problem(span: Mapping[str, Any]) -> str | None:
    for key in ID_FIELDS:
        value = span.get(key)
        if key == "parentSpanId" and value in (None, ""):
            continue
        if not (isinstance(value, str) and len(value) == _ID_DIGITS[key] and _HEX.fullmatch(value)):
            return f"{key}: expected {_ID_DIGITS[key]} lowercase hex digits, got {_shown(value)}"
    if not isinstance(span.get("name", ""), str):
        return f"name: expected a string, got {_shown(span['name'])}"
    for key in ("startTimeUnixNano", "endTimeUnixNano"):
        value = span.get(key, "0")
        if not ((isinstance(value, str) and value.isdigit()) or (type(value) is int and value >= 0)):
            return f"{key}: expected nanoseconds (a string of digits), got {_shown(value)}"
    if not isinstance(span.get("status", {}), dict):
        return f"status: expected an object, got {_shown(span['status'])}"
    for key in ("attributes", "events"):
        if not isinstance(span.get(key, []), list):
            return f"{key}: expected a list, got {_shown(span[key])}"
    for n, attribute in enumerate(span.get("attributes", [])):
        if not isinstance(attribute, dict):
            return f"attributes[{n}]: expected an object, got {_shown(attribute)}"
        if not isinstance(attribute.get("key"), str):
            return f"attributes[{n}].key: expected a string, got {_shown(attribute.get('key'))}"
        if (problem := _value_problem(attribute.get("value"))) is not None:
            return f"attributes[{n}].value: {problem}"
    return None


_ANY_VALUE: dict[str, Any] = {"stringValue": str, "boolValue": bool, "intValue": (str, int), "bytesValue": str,
                              "doubleValue": (int, float, str), "arrayValue": dict, "kvlistValue": dict}


def _value_problem(value: Any) -> str | None:
    """An attribute's OTLP ``AnyValue``: an object of at most one member, of one of its kinds."""
    if not isinstance(value, dict):
        return f"expected an OTLP AnyValue object, got {_shown(value)}"
    for kind, inner in value.items():
        if kind not in _ANY_VALUE or len(value) > 1:
            return f"expected one of {', '.join(_ANY_VALUE)}, got {_shown(value)}"
        if not isinstance(inner, _ANY_VALUE[kind]) or (isinstance(inner, bool) and kind != "boolValue"):
            wanted = {"intValue": "an integer", "doubleValue": "a number"}.get(kind) or _ANY_VALUE[kind].__name__
            return f"{kind}: expected {wanted}, got {_shown(inner)}"
    return None


def _shown(value: Any) -> str:
    try:
        return _short(json.dumps(value, ensure_ascii=False), 60)
    except (ValueError, TypeError, RecursionError):
        return type(value).__name__


def _short(text: str, size: int = 200) -> str:
    from harness.errors import one_line

    return one_line(text)[:size]
