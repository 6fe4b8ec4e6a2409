"""Render the self-contained HTML report (jinja2 template, inline CSS/JS/SVG, no network). Writes nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

import jinja2

from harness import charts
from harness.outputs import HEADLINE
from harness.replay import ScenarioResult
from memory_core.index import MAX_INDEX_CHARS, MAX_INDEX_LINES


@cache
def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("harness", "templates"),
                             autoescape=jinja2.select_autoescape(["html", "j2"]), undefined=jinja2.StrictUndefined)
    env.filters["num"] = _num
    return env


def _num(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        if float(value).is_integer():
            return str(int(value))
        return f"{value:.{digits}f}"
    return str(value)


def flatten_spans(lines: Sequence[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """OTLP-JSON lines → spans grouped by trace id."""
    out: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        for rs in line.get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                for span in ss.get("spans", []):
                    out.setdefault(span["traceId"], []).append(span)
    return out


def _metric_rows(results: Sequence[ScenarioResult], metric: str) -> list[tuple[str, dict[str, float | None]]]:
    """Per scenario, per strategy: the mean of a recall-probe metric."""
    by: dict[str, dict[str, float | None]] = {}
    for r in results:
        vals = [p["metrics"][metric] for p in r.probes if p["kind"] == "recall" and p["metrics"].get(metric) is not None]
        if vals:
            by.setdefault(r.scenario, {})[r.strategy] = sum(vals) / len(vals)
    return sorted(by.items())


def render_report(summary: Mapping[str, Any], results: Sequence[ScenarioResult], spans: Sequence[Mapping[str, Any]],
                  *, fuzz: Mapping[str, Any] | None = None, bench: Mapping[str, Any] | None = None) -> str:
    """The whole report as one HTML string."""
    strategies = list(summary["strategies"])
    traces = flatten_spans(spans)
    ordered = sorted(results, key=lambda r: ({"error": 0, "failed": 1, "passed": 2}[r.status], r.scenario, r.strategy))
    latency = {s: [p["duration_ms"] for r in results if r.strategy == s for p in r.probes if p["kind"] == "recall"]
               for s in strategies}
    finals = [(f"{r.scenario} [{r.strategy}]", p["metrics"]) for r in results for p in r.probes if p.get("final")]
    index_lines = sorted(((label, float(m.get("index.lines", 0))) for label, m in finals if strategies and
                          label.endswith(f"[{strategies[0]}]")), key=lambda x: -x[1])[:25]
    index_chars = sorted(((label, float(m.get("index.bytes", 0))) for label, m in finals if strategies and
                          label.endswith(f"[{strategies[0]}]")), key=lambda x: -x[1])[:25]
    per_scenario = {m: _metric_rows(results, m) for m in ("precision", "recall", "f1")}
    gates = sorted(summary.get("gates", []), key=lambda g: g["passed"])
    prompt_versions = sorted({v for r in results for v in r.prompt_versions})
    fallbacks: dict[str, int] = {}
    for r in results:
        for p in r.probes:
            if p.get("fallback_reason"):
                fallbacks[p["fallback_reason"]] = fallbacks.get(p["fallback_reason"], 0) + 1
    return _env().get_template("report.html.j2").render(
        summary=summary, strategies=strategies, results=ordered, headline=HEADLINE, gates=gates,
        comparisons=summary.get("comparisons", []), baseline=summary.get("baseline"),
        meta=summary.get("meta", {}), prompt_versions=prompt_versions, fallbacks=fallbacks, fuzz=fuzz, bench=bench,
        charts_per_scenario=[charts.grouped_bars(rows, strategies, title=f"Recall {m} per scenario (mean over its "
                                                 "recall probes)") for m, rows in per_scenario.items() if rows],
        chart_latency=charts.histogram(latency, title="Recall latency (real wall clock)", unit="ms"),
        chart_index_lines=charts.cap_bars(index_lines, cap=MAX_INDEX_LINES, title="MEMORY.md lines at the end "
                                          "(largest 25)", unit="lines"),
        chart_index_bytes=charts.cap_bars(index_chars, cap=MAX_INDEX_CHARS, title="MEMORY.md size at the end "
                                          "(largest 25)", unit="bytes"),
        waterfalls={r.trace_id: charts.waterfall(traces.get(r.trace_id, [])) for r in ordered},
    )


def render_benchmark(bench: Mapping[str, Any]) -> str:
    """A self-contained HTML page for a ``memharness bench`` run."""
    return _env().get_template("benchmark.html.j2").render(bench=bench)
