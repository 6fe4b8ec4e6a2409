"""``memharness traces push``: replay a finished run's ``traces.jsonl`` into any OTLP/HTTP backend.

CI keeps the run directory as an artifact; pushing it later puts the run's traces in Phoenix (or any OTLP
backend) exactly as they were recorded (same ids, times and attributes), so they can be inspected after the fact.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.reporting._rundir import numbered_jsonl
from harness.telemetry import checked_lines, otlp_request, otlp_spans
from harness.tools._http import PUSH_WORDS, fetch


def batches(lines: Sequence[Mapping[str, Any]], size: int = 200) -> Iterator[bytes]:
    """Protobuf ``ExportTraceServiceRequest`` bodies of about ``size`` spans (whole lines: a trace is never split)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request, spans = ExportTraceServiceRequest(), 0
    for line in lines:  # a line is one trace (many spans) or, in older runs, one span
        part = otlp_request(line)
        request.resource_spans.extend(part.resource_spans)
        spans += sum(len(ss.spans) for rs in part.resource_spans for ss in rs.scope_spans)
        if spans >= size:
            yield request.SerializeToString()
            request, spans = ExportTraceServiceRequest(), 0
    if request.resource_spans:
        yield request.SerializeToString()


def push(run_dir: Path, endpoint: str, *, headers: Mapping[str, str] | None = None, timeout: float = 30.0) -> int:
    """POST every span of ``run_dir/traces.jsonl`` to ``endpoint`` (``…/v1/traces`` appended unless given);
    returns the number of spans sent. Any failure is one ``HarnessError`` line."""
    if not endpoint.startswith(("http://", "https://")) or any(c in endpoint for c in "\r\n "):
        raise HarnessError(f"--endpoint {endpoint!r}: expected an http(s) URL such as http://127.0.0.1:6006")
    for key, value in (headers or {}).items():
        if not key.strip() or any(c in key + value for c in "\r\n"):
            raise HarnessError(f"--header {key!r}: a header name and value are one line each")
    path = run_dir / "traces.jsonl"
    lines = checked_lines(path, numbered_jsonl(path), protobuf=True)  # the check every reader makes (read_run)
    if not lines:
        raise HarnessError(f"{path}: no spans to push")
    url = endpoint.rstrip("/")
    if not url.endswith("/v1/traces"):
        url += "/v1/traces"
    bodies = list(batches(lines))
    for body in bodies:
        request = urllib.request.Request(url, data=body, method="POST", headers={
            "Content-Type": "application/x-protobuf", **(headers or {})})
        fetch(request, timeout=timeout, what=url, words=PUSH_WORDS)
    return len(otlp_spans(lines))
