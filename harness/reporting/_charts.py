"""Small inline-SVG charts for the report (no JS library, no network)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

PALETTE = ("#3b6fd6", "#e07b39", "#3aa57a", "#a155c6", "#c9455a", "#7d8a99")


def grouped_bars(rows: Sequence[tuple[str, Mapping[str, float | None]]], series: Sequence[str], *,
                 title: str, max_value: float = 1.0, width: int = 860) -> str:
    """Horizontal grouped bars: one group per row label, one bar per series (values 0..max_value)."""
    bar_h, gap, label_w, top = 9, 8, 250, 44
    group_h = bar_h * len(series) + gap
    height = top + group_h * len(rows) + 20
    plot_w = width - label_w - 60
    out = [f'<svg class="chart" role="img" aria-label="{escape(title)}" viewBox="0 0 {width} {height}" '
           f'width="100%" xmlns="http://www.w3.org/2000/svg">',
           f'<text x="4" y="16" class="ct">{escape(title)}</text>']
    for k, name in enumerate(series):
        out.append(f'<rect x="{label_w + 120 * k}" y="22" width="10" height="10" fill="{PALETTE[k % 6]}"/>'
                   f'<text x="{label_w + 14 + 120 * k}" y="31" class="cl">{escape(name)}</text>')
    for i, (label, values) in enumerate(rows):
        y0 = top + i * group_h
        out.append(f'<text x="{label_w - 6}" y="{y0 + group_h / 2}" text-anchor="end" class="cl">{escape(label[:42])}</text>')
        for k, name in enumerate(series):
            v = values.get(name)
            w = 0 if v is None else max(0.0, min(1.0, v / max_value)) * plot_w
            y = y0 + k * bar_h
            out.append(f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h - 1}" fill="{PALETTE[k % 6]}">'
                       f'<title>{escape(label)} · {escape(name)}: {"n/a" if v is None else f"{v:.3f}"}</title></rect>')
    for t in (0, 0.5, 1.0):
        x = label_w + t * plot_w
        out.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{height - 16}" class="grid"/>'
                   f'<text x="{x:.1f}" y="{height - 4}" text-anchor="middle" class="cl">{t * max_value:g}</text>')
    out.append("</svg>")
    return "".join(out)


def histogram(values_by_series: Mapping[str, Sequence[float]], *, title: str, unit: str, bins: int = 24,
              width: int = 860, height: int = 210) -> str:
    """Side-by-side histograms on a log10 axis (latencies span orders of magnitude), p50/p95 markers per series."""
    allv = [max(v, 1e-3) for vs in values_by_series.values() for v in vs]
    if not allv:
        return f'<p class="muted">{escape(title)}: no data</p>'
    lo, hi = math.log10(min(allv)), math.log10(max(allv))
    hi = hi if hi > lo else lo + 1
    step = (hi - lo) / bins
    plot_w, plot_h, left = width - 60, height - 60, 40

    def x_of(value: float) -> float:
        return left + (math.log10(max(value, 1e-3)) - lo) / (hi - lo) * plot_w

    out = [f'<svg class="chart" role="img" aria-label="{escape(title)}" viewBox="0 0 {width} {height}" width="100%" '
           f'xmlns="http://www.w3.org/2000/svg"><text x="4" y="16" class="ct">{escape(title)}</text>']
    counts_all = []
    for vs in values_by_series.values():
        counts = [0] * bins
        for v in vs:
            counts[min(bins - 1, int((math.log10(max(v, 1e-3)) - lo) / step))] += 1
        counts_all.append(counts)
    peak = max(max(c) for c in counts_all) or 1
    bw = plot_w / bins
    n = len(counts_all)
    for k, (name, counts) in enumerate(zip(values_by_series, counts_all, strict=True)):
        color = PALETTE[k % 6]
        for b, c in enumerate(counts):
            h = c / peak * plot_h
            a, z = 10 ** (lo + b * step), 10 ** (lo + (b + 1) * step)
            out.append(f'<rect x="{left + b * bw + k * bw / n:.1f}" y="{26 + plot_h - h:.1f}" '
                       f'width="{max(bw / n - 1, 1):.1f}" height="{h:.1f}" fill="{color}" opacity="0.85">'
                       f'<title>{escape(name)}: {c} probes in [{a:.3g}, {z:.3g}) {unit}</title></rect>')
        ordered = sorted(values_by_series[name])
        for q, dash in ((0.5, "4 2"), (0.95, "1 2")):
            if not ordered:
                continue
            v = ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]
            out.append(f'<line x1="{x_of(v):.1f}" y1="26" x2="{x_of(v):.1f}" y2="{26 + plot_h}" stroke="{color}" '
                       f'stroke-dasharray="{dash}"><title>{escape(name)} p{int(q * 100)} = {v:.3g} {unit}</title></line>')
        out.append(f'<rect x="{left + 150 * k}" y="{height - 14}" width="10" height="10" fill="{color}"/>'
                   f'<text x="{left + 14 + 150 * k}" y="{height - 5}" class="cl">{escape(name)}</text>')
    for decade in range(math.floor(lo), math.ceil(hi) + 1):
        x = left + (decade - lo) / (hi - lo) * plot_w
        if left - 1 <= x <= left + plot_w + 1:
            out.append(f'<line x1="{x:.1f}" y1="26" x2="{x:.1f}" y2="{28 + plot_h}" class="grid"/>'
                       f'<text x="{x:.1f}" y="{40 + plot_h}" text-anchor="middle" class="cl">{10.0 ** decade:g} {unit}</text>')
    out.append(f'<text x="{width - 10}" y="{height - 5}" text-anchor="end" class="cl">log scale; dashed = p50, '
               f'dotted = p95</text></svg>')
    return "".join(out)


def cap_bars(rows: Sequence[tuple[str, float]], *, cap: float, title: str, unit: str, width: int = 860) -> str:
    """Bars against a cap line (index size against its caps)."""
    if not rows:
        return f'<p class="muted">{escape(title)}: no data</p>'
    label_w, bar_h = 250, 12
    height = 30 + len(rows) * (bar_h + 3) + 24
    top = max(cap * 1.1, max(v for _, v in rows))
    plot_w = width - label_w - 40
    out = [f'<svg class="chart" role="img" aria-label="{escape(title)}" viewBox="0 0 {width} {height}" width="100%" '
           f'xmlns="http://www.w3.org/2000/svg"><text x="4" y="16" class="ct">{escape(title)}</text>']
    for i, (label, v) in enumerate(rows):
        y = 28 + i * (bar_h + 3)
        color = "#c9455a" if v > cap else "#3b6fd6"
        out.append(f'<text x="{label_w - 6}" y="{y + bar_h - 2}" text-anchor="end" class="cl">{escape(label[:42])}</text>'
                   f'<rect x="{label_w}" y="{y}" width="{v / top * plot_w:.1f}" height="{bar_h}" fill="{color}">'
                   f'<title>{escape(label)}: {v:g} {unit}</title></rect>')
    x = label_w + cap / top * plot_w
    out.append(f'<line x1="{x:.1f}" y1="24" x2="{x:.1f}" y2="{height - 18}" stroke="#c9455a" stroke-dasharray="5 3"/>'
               f'<text x="{x:.1f}" y="{height - 4}" text-anchor="middle" class="cl">cap {cap:g} {unit}</text></svg>')
    return "".join(out)


def waterfall(spans: Sequence[Mapping[str, Any]], *, width: int = 860) -> str:
    """A span waterfall for one trace: bars on the logical timeline, indented by depth."""
    if not spans:
        return '<p class="muted">no spans recorded for this trace</p>'
    starts = [int(s["startTimeUnixNano"]) for s in spans]
    ends = [int(s["endTimeUnixNano"]) for s in spans]
    t0, t1 = min(starts), max(ends)
    span_ns = max(t1 - t0, 1)
    by_id = {s["spanId"]: s for s in spans}

    def depth(s: Mapping[str, Any]) -> int:
        d, cur = 0, s
        while cur.get("parentSpanId") in by_id:
            cur, d = by_id[cur["parentSpanId"]], d + 1
        return d

    ordered = sorted(spans, key=lambda s: (int(s["startTimeUnixNano"]), depth(s)))
    row_h, label_w = 16, 300
    height = len(ordered) * row_h + 8
    plot_w = width - label_w - 10
    out = [f'<svg class="chart" role="img" aria-label="span waterfall" viewBox="0 0 {width} {height}" width="100%" '
           f'xmlns="http://www.w3.org/2000/svg">']
    for i, s in enumerate(ordered):
        attrs = {a["key"]: next(iter(a["value"].values()), "") for a in s.get("attributes", [])}
        x = label_w + (int(s["startTimeUnixNano"]) - t0) / span_ns * plot_w
        w = max(2.0, (int(s["endTimeUnixNano"]) - int(s["startTimeUnixNano"])) / span_ns * plot_w)
        err = s.get("status", {}).get("code") in (2, "STATUS_CODE_ERROR")
        color = "#c9455a" if err else ("#e07b39" if s["name"].startswith("chat") else "#3b6fd6")
        y = 4 + i * row_h
        tip = ", ".join(f"{k}={v}" for k, v in attrs.items() if k.startswith(("memory.", "gen_ai.", "error.")))[:400]
        out.append(f'<text x="{4 + depth(s) * 12}" y="{y + 11}" class="cl">{escape(s["name"][:44])}</text>'
                   f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row_h - 4}" fill="{color}" rx="2">'
                   f'<title>{escape(s["name"])} {escape(tip)} (real {attrs.get("memory.duration_ms", "?")} ms)</title></rect>')
    out.append("</svg>")
    return "".join(out)
