"""Render the self-contained HTML report (jinja2 template, inline CSS, the vendored Chart.js inlined, no network).
Writes nothing. Verdict first, then failures and flips, then charts, then the per-probe drill-down."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from typing import Any, Final, TypeVar

import jinja2
from markupsafe import Markup

from harness.evaluation import RunSummary, p_text, recall_mean
from harness.replay import SPEC_LIMITS, ScenarioResult, sorted_results
from harness.reporting import _charts as charts
from harness.reporting import _view as view
from harness.reporting._history import TREND_METRICS, HistoryRun
from harness.reporting._text import headline
from harness.reporting._traces import TraceSpool, Waterfalls, spooled
from harness.telemetry import otlp_spans

TREND_CHART_METRICS = ("recall.f1", "recall.precision", "recall.recall")
_T = TypeVar("_T")


@cache
def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("harness.reporting", "templates"),
                             autoescape=jinja2.select_autoescape(["html", "j2"]), undefined=jinja2.StrictUndefined)
    env.filters["num"] = _num
    env.filters["sig3"] = view.sig3
    env.filters["pvalue"] = p_text
    return env


def _num(value: Any, digits: int = 3) -> Markup | str:
    """Numbers with 3 significant digits; None renders as a visible "no data" (never as 0)."""
    if value is None:
        return Markup('<span class="nodata">no data</span>')
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        if float(value).is_integer():
            return str(int(value))
        return f"{value:.{digits}g}"
    return str(value)


def flatten_spans(lines: Sequence[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """OTLP-JSON lines → spans grouped by trace id."""
    out: dict[str, list[dict[str, Any]]] = {}
    for span in otlp_spans(lines):
        out.setdefault(span["traceId"], []).append(span)
    return out


def _top_index_rows(rows: list[tuple[str, float, bool | None]]) -> list[tuple[str, float, bool | None]]:
    return sorted(rows, key=lambda x: -x[1])[:25]


class _ChartRows:
    """What the charts need of a run's results, gathered in one pass: a run's results are read back from disk one
    at a time, a pass per chart was eight (issue 34)."""

    def __init__(self, strategies: Sequence[str]) -> None:
        self.means: dict[str, dict[str, dict[str, float | None]]] = {m: {} for m in ("f1", "recall", "precision")}
        self.latency: dict[str, list[float]] = {s: [] for s in strategies}
        self.index: dict[str, list[tuple[str, float, bool | None]]] = {"index.lines": [], "index.bytes": []}

    def add(self, r: ScenarioResult) -> None:
        for m, by in self.means.items():  # per_scenario_means of each
            if (mean := recall_mean(r, m)) is not None:
                by.setdefault(r.scenario, {})[r.strategy] = mean
        if r.strategy in self.latency:
            self.latency[r.strategy] += [p.duration_ms for p in r.probes if p.kind == "recall" and p.graded]
        for p in r.probes:
            if not p.final:
                continue
            for metric, rows in self.index.items():
                if (value := p.metric(metric)) is not None:
                    within = p.metric("index.within_limits")
                    rows.append((f"{r.scenario} [{r.strategy}]", value, None if within is None else bool(within)))


def _chart_specs(summary: RunSummary, gathered: _ChartRows, history: Sequence[HistoryRun]) -> dict[str, charts.ChartSpec]:
    strategies = list(summary.strategies)
    specs: dict[str, charts.ChartSpec | None] = {}
    for m, by in gathered.means.items():
        rows = sorted(by.items())
        specs[f"per-scenario-{m}"] = charts.per_scenario_bars(rows, strategies, metric=m) if rows else None
    specs["latency"] = charts.latency_histogram(gathered.latency, stats={
        s: (summary.strategies[s].metric("latency.recall_ms.p50"), summary.strategies[s].metric("latency.recall_ms.p95"))
        for s in strategies})
    specs["index-lines"] = charts.index_against_cap(_top_index_rows(gathered.index["index.lines"]), cap=SPEC_LIMITS.max_lines,
                                                    unit="lines", what="lines")
    specs["index-bytes"] = charts.index_against_cap(_top_index_rows(gathered.index["index.bytes"]), cap=SPEC_LIMITS.max_chars,
                                                    unit="characters", what="size")
    runs = [{"created_at": h.created_at, "git_commit": h.git_commit, "metrics": h.metrics} for h in history]
    specs["trend"] = charts.trend(runs, strategies, TREND_CHART_METRICS)
    return {k: v for k, v in specs.items() if v is not None}


def _json_for_script(data: Any) -> Markup:
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, default=str)
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def prepare_report() -> None:
    """Load and compile the report's templates now (a run does this while it waits for other processes)."""
    for name in ("report.html.j2", "_scenario.html.j2", "_style.html.j2"):  # and what it includes for every run
        _env().get_template(name)


def render_report(summary: RunSummary, results: Sequence[ScenarioResult],
                  spans: Sequence[Mapping[str, Any]] | TraceSpool, *, bench: Mapping[str, Any] | None = None,
                  history: Sequence[HistoryRun] = ()) -> str:
    """The whole report as one HTML string. ``history``: past runs (oldest first) for the trend chart and table."""
    return "".join(report_chunks(summary, results, spans, bench=bench, history=history))


def report_chunks(summary: RunSummary, results: Sequence[ScenarioResult],
                  spans: Sequence[Mapping[str, Any]] | TraceSpool, *, bench: Mapping[str, Any] | None = None,
                  history: Sequence[HistoryRun] = ()) -> Iterator[str]:
    """The report in pieces as the template renders it (``write_run`` streams them to the file): each scenario's
    probe views and waterfall are built when its section is reached, so no whole-run copy of them exists."""
    strategies = list(summary.strategies)
    spool = spooled(spans)
    survey = _Survey(summary, results)
    ordered = sorted_results(results, key=_report_order, keys=survey.keys)  # a spool stays one
    calls = view.load_cassette_calls(summary.meta.get("cassettes"))
    probe_views = _ProbeViews(calls, spool.candidates)
    gates = sorted(summary.gates, key=lambda g: g.passed)
    specs = _chart_specs(summary, survey.charts, history)
    gathered = {"verdict": view.verdict_of(summary, survey.statuses), "failing": survey.in_order(survey.failing),
                "flips": view.flips_among(survey.graded, strategies), "suspicious": survey.in_order(survey.suspicious),
                "prompt_versions": sorted(survey.prompt_versions), "fallbacks": survey.fallbacks}
    del survey  # its keys and flip outcomes (a few MB at 10,000 runs) are not held while the sections render
    try:
        yield from _env().get_template("report.html.j2").generate(
            summary=summary, strategies=strategies, results=ordered, headline=headline(), cards=view.cards(summary),
            card_metrics=view.CARD_METRICS, failed_gates=[g for g in gates if not g.passed],
            passed_gates=[g for g in gates if g.passed and not g.skipped], skipped_gates=[g for g in gates if g.skipped],
            comparisons=summary.comparisons, baseline=summary.baseline, effect_words=view.effect_words,
            delta_css=view.delta_css, meta=summary.meta, fuzz=summary.fuzz, bench=bench,
            probe_views=probe_views, chart_ids=list(specs), chart_data=_json_for_script(specs),
            chartjs=Markup(charts.chartjs_source()), history=list(history), trend_metrics=TREND_METRICS,
            waterfalls=Waterfalls(spool), **gathered,
        )
    finally:
        if spool is not spans:
            spool.close()


_STATUS_ORDER: Final = {"error": 0, "failed": 1, "skipped": 2, "passed": 3}


def _report_order(r: ScenarioResult) -> tuple[int, str, str]:
    """The report's order of scenario runs: errors, failures, skips, passes; then by scenario and strategy."""
    return _STATUS_ORDER[r.status], r.scenario, r.strategy


class _Survey:
    """What the report needs of every result besides its own section, gathered in one pass: a run's results are
    read back from disk one at a time, and a pass each (order, verdict, charts, flips, flags, failures, prompt
    versions, fallbacks) was eleven, a third of writing the report (issue 34). Kept: a sort key per result, the
    charts' rows, the flips' outcomes, and the failing and flagged results themselves (as listed)."""

    def __init__(self, summary: RunSummary, results: Sequence[ScenarioResult]) -> None:
        strategies = list(summary.strategies)
        self.keys: list[tuple[int, str, str]] = []
        self.statuses: Counter[str] = Counter()
        self.charts = _ChartRows(strategies)
        self.graded: dict[tuple[str, int, str], tuple[bool | None, str]] = {}
        self.failing: list[tuple[tuple[int, str, str], int, ScenarioResult]] = []
        self.suspicious: list[tuple[tuple[int, str, str], int, tuple[ScenarioResult, int, int]]] = []
        self.prompt_versions: set[str] = set()
        self.fallbacks: dict[str, int] = {}
        for i, r in enumerate(results):
            key = _report_order(r)
            self.keys.append(key)
            self.statuses[r.status] += 1
            self.charts.add(r)
            if len(strategies) > 1:
                self.graded.update(view.flip_inputs(r))
            if r.status in ("failed", "error"):
                self.failing.append((key, i, r))
            if (counts := view.suspicion(r)) is not None:
                self.suspicious.append((key, i, (r, *counts)))
            self.prompt_versions.update(r.prompt_versions)
            for p in r.probes:
                if p.fallback_reason:
                    self.fallbacks[p.fallback_reason] = self.fallbacks.get(p.fallback_reason, 0) + 1

    @staticmethod
    def in_order(rows: list[tuple[tuple[int, str, str], int, _T]]) -> list[_T]:
        """What was kept of some results, in the report's order (stable, as ``sorted_results``)."""
        return [item for _, _, item in sorted(rows, key=lambda row: row[:2])]


class _ProbeViews:
    """``probe_views.of(r)`` of the template: a result's probe views, built when its section is reached."""

    def __init__(self, calls: Mapping[tuple[str, int], Any], candidates: Mapping[tuple[str, int], int]) -> None:
        self._calls = calls
        self._candidates = candidates

    def of(self, r: ScenarioResult) -> list[view.ProbeView]:
        return [view.probe_view(p, self._calls.get((r.scenario, p.step), []) if p.tokens.calls or p.fallback_reason
                                else [], self._candidates.get((r.trace_id, p.step))) for p in r.probes]


def render_benchmark(bench: Mapping[str, Any]) -> str:
    """A self-contained HTML page for a ``memharness bench`` run."""
    return _env().get_template("benchmark.html.j2").render(bench=bench)
