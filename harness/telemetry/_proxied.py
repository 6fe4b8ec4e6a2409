"""Spans for the model calls a system makes through the model proxy (its own client, not the harness's model)."""

from __future__ import annotations

import time
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from harness.telemetry import semconv as sc
from harness.telemetry._spans import Telemetry


def proxied_call_span(t: Telemetry, call: Any) -> None:
    """A ``chat {model}`` / ``embeddings {model}`` CLIENT span for one proxied call, a child of the memory operation
    it happened in (the proxy answers on its own thread while the operation waits), ending now and lasting the
    call's latency. ``call`` is a ``harness.replay.ProxyCall``."""
    timed = t._timed
    context = trace.set_span_in_context(timed.span) if timed is not None else None
    operation = "embeddings" if call.endpoint == "embeddings" else "chat"
    end = time.time_ns()
    attributes: dict[str, Any] = {
        sc.GEN_AI_OPERATION_NAME: operation, sc.OPENINFERENCE_SPAN_KIND: "EMBEDDING" if operation == "embeddings" else "LLM",
        sc.GEN_AI_REQUEST_MODEL: call.model, sc.GEN_AI_PROVIDER_NAME: "model-proxy", sc.MEMORY_SCENARIO_TIME: t.fake_now,
        sc.GEN_AI_USAGE_INPUT: call.input_tokens, sc.GEN_AI_USAGE_OUTPUT: call.output_tokens,
        sc.MEMORY_LLM_REPLAYED: call.outcome == "replayed", "memory.proxy.outcome": call.outcome,
        "http.response.status_code": call.status, sc.MEMORY_DURATION_REAL_MS: round(call.latency_ms, 3)}
    span = t.tracer.start_span(f"{operation} {call.model or '?'}", context=context, kind=SpanKind.CLIENT,
                               start_time=end - int(call.latency_ms * 1e6), attributes=attributes)
    if call.status >= 400:
        span.set_attribute(sc.ERROR_TYPE, call.outcome)
        span.set_status(Status(StatusCode.ERROR, f"{call.outcome} ({call.status})"))
    else:
        span.set_status(Status(StatusCode.OK))
    span.end(end_time=end)
