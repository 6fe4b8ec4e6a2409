"""Chart specifications for the report, drawn in the browser by the vendored Chart.js (inlined, no network).

Each function returns a JSON-serialisable Chart.js config with axis titles, a legend and tooltips. ``None`` stands
for "no data" and is never drawn as 0: bars are simply absent and the category label says "no data".
The span waterfall stays a small inline SVG (with a time axis).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import cache
from html import escape
from importlib import resources
from typing import Any

PALETTE = ("#3b6fd6", "#e07b39", "#3aa57a", "#a155c6", "#c9455a", "#7d8a99")
ChartSpec = dict[str, Any]


@cache
def chartjs_source() -> str:
    """The vendored Chart.js UMD bundle (its source-map comment dropped: nothing is fetched from file://)."""
    text = resources.files("harness.reporting").joinpath("vendor/chart.umd.min.js").read_text(encoding="utf-8")
    return "\n".join(line for line in text.splitlines() if not line.startswith("//# sourceMappingURL"))


def _axis(title: str, **extra: Any) -> dict[str, Any]:
    return {"title": {"display": True, "text": title}, **extra}


def _base(kind: str, title: str, labels: Sequence[str], datasets: list[dict[str, Any]], *, x: dict[str, Any],
          y: dict[str, Any], horizontal: bool = False) -> ChartSpec:
    return {"type": kind, "data": {"labels": list(labels), "datasets": datasets},
            "options": {"indexAxis": "y" if horizontal else "x", "maintainAspectRatio": False, "animation": False,
                        "plugins": {"title": {"display": True, "text": title}, "legend": {"display": True},
                                    "tooltip": {"enabled": True}},
                        "scales": {"x": x, "y": y}}}


def per_scenario_bars(rows: Sequence[tuple[str, Mapping[str, float | None]]], series: Sequence[str], *,
                      metric: str) -> ChartSpec:
    """Horizontal grouped bars: one category per scenario, one bar per strategy, 0..1."""
    labels = []
    for label, values in rows:
        missing = [s for s in series if values.get(s) is None]
        labels.append(f"{label} ({', '.join(missing)}: no data)" if missing else label)
    datasets = [{"label": name, "backgroundColor": PALETTE[k % 6], "minBarLength": 2,
                 "data": [values.get(name) for _, values in rows]}
                for k, name in enumerate(series)]
    return _base("bar", f"Recall {metric} per scenario (mean over its recall probes)", labels, datasets,
                 x=_axis(f"recall {metric} (0–1)", min=0, max=1), y=_axis("scenario", ticks={"autoSkip": False}),
                 horizontal=True)


def latency_histogram(values_by_series: Mapping[str, Sequence[float]], *, unit: str = "ms", bins: int = 16,
                      stats: Mapping[str, tuple[float | None, float | None]] | None = None) -> ChartSpec | None:
    """Counts of recall probes per log-spaced latency bin, one dataset per strategy; None without data. A series'
    p50/p95 in its label come from ``stats`` (the run summary's own metrics: one percentile everywhere)."""
    allv = [max(v, 1e-3) for vs in values_by_series.values() for v in vs]
    if not allv:
        return None
    lo, hi = math.log10(min(allv)), math.log10(max(allv))
    hi = hi if hi > lo else lo + 1
    step = (hi - lo) / bins
    edges = [10 ** (lo + b * step) for b in range(bins + 1)]
    labels = [f"{edges[b]:.3g}–{edges[b + 1]:.3g}" for b in range(bins)]
    datasets = []
    for k, (name, values) in enumerate(values_by_series.items()):
        counts = [0] * bins
        for v in values:
            counts[min(bins - 1, int((math.log10(max(v, 1e-3)) - lo) / step))] += 1
        p50, p95 = (stats or {}).get(name, (None, None))
        shown = f" (p50 {p50:.3g} {unit}, p95 {p95:.3g} {unit})" if p50 is not None and p95 is not None else " (no data)"
        datasets.append({"label": name + shown, "backgroundColor": PALETTE[k % 6], "data": counts})
    return _base("bar", "Recall latency distribution (real wall clock, log-spaced bins)", labels, datasets,
                 x=_axis(f"latency bin ({unit}, log scale)"), y=_axis("recall probes", beginAtZero=True,
                                                                     ticks={"precision": 0}))


def index_against_cap(rows: Sequence[tuple[str, float, bool | None]], *, cap: float, unit: str,
                      what: str) -> ChartSpec | None:
    """Bars of the index size per scenario with the cap as a line. A bar is red only when the scenario's own
    ``index.within_limits`` metric (what the gate reads) says the loaded index is over its limits; a file longer
    than the cap but truncated to it on load stays blue and says so in its tooltip label."""
    if not rows:
        return None
    labels = [label + (" (file over cap, loaded truncated)" if v > cap and within else "") for label, v, within in rows]
    colors = ["#c9455a" if within is False else "#3b6fd6" for _, _, within in rows]
    datasets: list[dict[str, Any]] = [
        {"type": "bar", "label": f"MEMORY.md {what} at the end", "data": [v for _, v, _ in rows],
         "backgroundColor": colors, "order": 2},
        {"type": "line", "label": f"cap ({cap:g} {unit})", "data": [cap] * len(rows), "borderColor": "#c9455a",
         "borderDash": [6, 4], "pointRadius": 0, "fill": False, "order": 1},
    ]
    return _base("bar", f"MEMORY.md {what} against the cap (largest {len(rows)})", labels, datasets,
                 x=_axis(f"{what} ({unit})", beginAtZero=True), y=_axis("scenario", ticks={"autoSkip": False}),
                 horizontal=True)


def trend(runs: Sequence[Mapping[str, Any]], strategies: Sequence[str], metrics: Sequence[str]) -> ChartSpec | None:
    """Headline metrics over the last runs (oldest left), one line per strategy × metric."""
    if not runs:
        return None
    labels = [f"{str(r['created_at'])[:16].replace('T', ' ')} {r['git_commit'][:7]}".strip() for r in runs]
    dashes: tuple[list[int], ...] = ([], [6, 3], [2, 3], [10, 3, 2, 3])
    datasets = []
    for k, strategy in enumerate(strategies):
        for j, metric in enumerate(metrics):
            datasets.append({"label": f"{strategy} {metric}", "borderColor": PALETTE[k % 6],
                             "backgroundColor": PALETTE[k % 6], "borderDash": dashes[j % 4], "spanGaps": False,
                             "data": [r["metrics"].get(strategy, {}).get(metric) for r in runs]})
    return _base("line", f"Trend over the last {len(runs)} run(s)", labels, datasets,
                 x=_axis("run (UTC time, commit)"), y=_axis("metric value (0–1)", min=0, max=1))


def waterfall(spans: Sequence[Mapping[str, Any]], *, width: int = 860) -> str:
    """A span waterfall for one trace: bars on the logical timeline, indented by depth, with a time axis."""
    if not spans:
        return '<p class="muted">no spans recorded for this trace</p>'
    # OTLP-JSON leaves out a time of 0 and an empty name (read_run checked the rest: ids, kinds of values)
    spans = [{**s, "name": s.get("name", ""), "startTimeUnixNano": int(s.get("startTimeUnixNano", 0)),
              "endTimeUnixNano": int(s.get("endTimeUnixNano", 0))} for s in spans]
    starts = [s["startTimeUnixNano"] for s in spans]
    ends = [s["endTimeUnixNano"] for s in spans]
    t0, t1 = min(starts), max(ends)
    span_ns = max(t1 - t0, 1)
    by_id = {s["spanId"]: s for s in spans}

    def depth(s: Mapping[str, Any]) -> int:
        d, cur = 0, s
        while cur.get("parentSpanId") in by_id and d < 32:
            cur, d = by_id[cur["parentSpanId"]], d + 1
        return d

    ordered = sorted(spans, key=lambda s: (int(s["startTimeUnixNano"]), depth(s)))
    row_h, label_w = 16, 300
    height = len(ordered) * row_h + 34
    plot_w = width - label_w - 20
    out = [f'<svg class="chart waterfall" role="img" aria-label="span waterfall" viewBox="0 0 {width} {height}" '
           f'width="100%" xmlns="http://www.w3.org/2000/svg">']
    for i, s in enumerate(ordered):
        attrs = {a["key"]: next(iter(a["value"].values()), "") for a in s.get("attributes", [])}
        x = label_w + (int(s["startTimeUnixNano"]) - t0) / span_ns * plot_w
        w = max(2.0, (int(s["endTimeUnixNano"]) - int(s["startTimeUnixNano"])) / span_ns * plot_w)
        err = s.get("status", {}).get("code") in (2, "STATUS_CODE_ERROR")
        color = "#c9455a" if err else ("#e07b39" if s["name"].startswith("chat") else "#3b6fd6")
        y = 4 + i * row_h
        tip = "; ".join(f"{k} = {v}" for k, v in attrs.items()
                        if k.startswith(("memory.", "gen_ai.", "error.")) and k != "memory.duration_ms")[:300]
        real = attrs.get("memory.duration_ms")
        out.append(f'<text x="{4 + depth(s) * 12}" y="{y + 11}" class="cl">{escape(s["name"][:44])}</text>'
                   f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row_h - 4}" fill="{color}" rx="2">'
                   f'<title>{escape(s["name"])}{" — " + escape(tip) if tip else ""}'
                   f'{f" (real {real} ms)" if real not in (None, "") else ""}</title></rect>')
    axis_y = len(ordered) * row_h + 8
    total_ms = span_ns / 1e6
    out.append(f'<line x1="{label_w}" y1="{axis_y}" x2="{label_w + plot_w}" y2="{axis_y}" class="axis"/>')
    for t in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = label_w + t * plot_w
        out.append(f'<line x1="{x:.1f}" y1="{axis_y}" x2="{x:.1f}" y2="{axis_y + 4}" class="axis"/>'
                   f'<text x="{x:.1f}" y="{axis_y + 15}" text-anchor="middle" class="cl">{t * total_ms:.4g}</text>')
    out.append(f'<text x="{label_w - 6}" y="{axis_y + 15}" text-anchor="end" class="cl">logical time (ms)</text></svg>')
    return "".join(out)
