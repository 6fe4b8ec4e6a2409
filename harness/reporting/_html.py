"""Render the self-contained HTML report (jinja2 template, inline CSS/JS/SVG, no network). Writes nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

import jinja2

from harness.evaluation import RunSummary, per_scenario_means
from harness.replay import SPEC_LIMITS, ScenarioResult
from harness.reporting import _charts as charts
from harness.reporting._text import HEADLINE


@cache
def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("harness.reporting", "templates"),
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


def render_report(summary: RunSummary, results: Sequence[ScenarioResult], spans: Sequence[Mapping[str, Any]],
                  *, bench: Mapping[str, Any] | None = None) -> str:
    """The whole report as one HTML string."""
    strategies = list(summary.strategies)
    traces = flatten_spans(spans)
    order = {"error": 0, "failed": 1, "skipped": 2, "passed": 3}
    ordered = sorted(results, key=lambda r: (order[r.status], r.scenario, r.strategy))
    latency = {s: [p.duration_ms for r in results if r.strategy == s for p in r.probes if p.kind == "recall" and p.graded]
               for s in strategies}
    first = [(r.scenario, p) for r in results if strategies and r.strategy == strategies[0] for p in r.probes
             if p.final and "index.lines" in p.metrics]
    index_lines = sorted(((f"{sid} [{strategies[0]}]", p.metric("index.lines") or 0.0) for sid, p in first),
                         key=lambda x: -x[1])[:25]
    index_chars = sorted(((f"{sid} [{strategies[0]}]", p.metric("index.bytes") or 0.0) for sid, p in first),
                         key=lambda x: -x[1])[:25]
    per_scenario = {m: per_scenario_means(results, m) for m in ("precision", "recall", "f1")}
    gates = sorted(summary.gates, key=lambda g: g.passed)
    prompt_versions = sorted({v for r in results for v in r.prompt_versions})
    fallbacks: dict[str, int] = {}
    for r in results:
        for p in r.probes:
            if p.fallback_reason:
                fallbacks[p.fallback_reason] = fallbacks.get(p.fallback_reason, 0) + 1
    return _env().get_template("report.html.j2").render(
        summary=summary, strategies=strategies, results=ordered, headline=HEADLINE, gates=gates,
        comparisons=summary.comparisons, baseline=summary.baseline,
        meta=summary.meta, prompt_versions=prompt_versions, fallbacks=fallbacks, fuzz=summary.fuzz, bench=bench,
        charts_per_scenario=[charts.grouped_bars(rows, strategies, title=f"Recall {m} per scenario (mean over its "
                                                 "recall probes)") for m, rows in per_scenario.items() if rows],
        chart_latency=charts.histogram(latency, title="Recall latency (real wall clock)", unit="ms"),
        chart_index_lines=charts.cap_bars(index_lines, cap=SPEC_LIMITS.max_lines, title="MEMORY.md lines at the end "
                                          "(largest 25)", unit="lines"),
        chart_index_bytes=charts.cap_bars(index_chars, cap=SPEC_LIMITS.max_chars, title="MEMORY.md size at the end "
                                          "(largest 25)", unit="bytes"),
        waterfalls={r.trace_id: charts.waterfall(traces.get(r.trace_id, [])) for r in ordered},
    )


def render_benchmark(bench: Mapping[str, Any]) -> str:
    """A self-contained HTML page for a ``memharness bench`` run."""
    return _env().get_template("benchmark.html.j2").render(bench=bench)
