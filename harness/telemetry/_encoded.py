"""A trace encoded where its spans were made: a ``--jobs N`` worker hands the run one ``traces.jsonl`` line (bytes)
and the little the report needs of it, instead of the OTLP-JSON dicts, which the run's process would unpickle and
re-encode while the workers wait for a core (issue 34: that was ~0.7 s of the parent's CPU per 1,000 scenarios)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.telemetry._setup import otlp_line, otlp_spans


def candidate_counts(spans: Sequence[Mapping[str, Any]]) -> dict[tuple[str, int], int]:
    """memory.recall.candidates per (trace id, step) from the spans."""
    out: dict[tuple[str, int], int] = {}
    for s in spans:
        attrs = {a["key"]: next(iter(a["value"].values()), None) for a in s.get("attributes", [])}
        step, count = attrs.get("memory.step"), attrs.get("memory.recall.candidates")
        if step is not None and count is not None:
            try:
                out[(str(s.get("traceId", "")), int(step))] = int(count)
            except (TypeError, ValueError, OverflowError):  # an infinity written as the count: no count
                continue
    return out


@dataclass(frozen=True, slots=True)
class EncodedTrace:
    """One OTLP-JSON request (a trace) as its ``traces.jsonl`` line, with its trace ids and recall candidate counts."""

    line: bytes
    """The line, newline included."""
    trace_ids: tuple[str, ...]
    candidates: Mapping[tuple[str, int], int]

    @classmethod
    def of(cls, request: Mapping[str, Any]) -> EncodedTrace:
        spans = otlp_spans([request])
        return cls((otlp_line(request) + "\n").encode(), tuple(dict.fromkeys(str(s.get("traceId", "")) for s in spans)),
                   candidate_counts(spans))
