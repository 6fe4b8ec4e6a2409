"""Turn probe records into the gateable numbers (DESIGN §4 ``summary.json``, §5 definitions) with pandas."""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pandas as pd

from harness.evaluation._parts import KindParts, kind_parts
from harness.evaluation._records import ChangedProbe, ScenarioCounts, StrategySummary
from harness.evaluation._stats import Comparison, compare
from harness.replay import Probe, ScenarioResult, split_column

COMPARED_METRICS = ("recall.f1", "recall.precision", "recall.recall", "recall.mrr", "recall.ndcg",
                    "recall.abstention_accuracy")
"""Metrics compared probe by probe (paired); the rest of the headline metrics are compared suite-wide."""
_PROBE_COLUMN = {"recall.abstention_accuracy": "m.abstention"}


def compared_metrics() -> tuple[str, ...]:
    """The built-in paired metrics, then every registered plugin recall metric (harness.plugins)."""
    from harness.plugins import REGISTRY

    return (*COMPARED_METRICS, *(name for name, p in sorted(REGISTRY.items()) if p.kind == "recall"))


def _probe_column(metric: str) -> str:
    from harness.plugins import REGISTRY

    plugin = REGISTRY.get(metric)
    return "m." + plugin.key if plugin is not None else _PROBE_COLUMN.get(metric, "m." + metric.split(".", 1)[1])


def _mean(series: pd.Series) -> float:
    values = pd.to_numeric(series, errors="coerce").dropna()
    return float(values.mean()) if len(values) else math.nan


def _col(frame: pd.DataFrame, name: str) -> pd.Series:
    return frame[name] if name in frame.columns else pd.Series(dtype=float)


class _WholeFrame:
    """A frame of one strategy's probes read as :class:`KindParts` are: a kind's rows, a column, the final rows."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame = frame

    def kind(self, kind: str) -> pd.DataFrame:
        return self.frame[self.frame["kind"] == kind]

    def column(self, name: str) -> pd.Series:
        return _col(self.frame, name)

    def final(self) -> pd.DataFrame:
        frame = self.frame
        return frame[_col(frame, "final").fillna(0.0).astype(bool)] if "final" in frame.columns else frame.iloc[0:0]


def strategy_metrics(frame: pd.DataFrame | KindParts) -> dict[str, float | None]:
    """The DESIGN §4 metric block for one strategy's probes: its whole frame (:func:`probe_frame`) or its frames by
    kind (:func:`kind_parts`, what a run's summary reads), the same numbers from either."""
    rows = _WholeFrame(frame) if isinstance(frame, pd.DataFrame) else frame
    rec, dream, forget, final = rows.kind("recall"), rows.kind("dream"), rows.kind("forget"), rows.final()
    latency = pd.to_numeric(_col(rec, "duration_ms"), errors="coerce").dropna()
    residual = pd.to_numeric(_col(dream, "m.residual_duplicates"), errors="coerce").dropna()
    out = {
        "recall.precision": _mean(_col(rec, "m.precision")),
        "recall.recall": _mean(_col(rec, "m.recall")),
        "recall.f1": _mean(_col(rec, "m.f1")),
        "recall.mrr": _mean(_col(rec, "m.mrr")),
        "recall.ndcg": _mean(_col(rec, "m.ndcg")),
        "recall.abstention_accuracy": _mean(_col(rec, "m.abstention")),
        "recall.probes": float(len(rec)),
        # nothing measured is None ("no data"), never an invented 0 or 1 a gate could pass on
        "dedupe.residual_duplicates": float(residual.sum()) if len(residual) else math.nan,
        "dedupe.retention": _mean(_col(dream, "m.retention")) if len(dream) else math.nan,
        "dedupe.dreams_run": float(len(residual)),
        "forget.precision": _mean(_col(forget, "m.precision")),
        "forget.recall": _mean(_col(forget, "m.recall")),
        "index.max_lines": float(pd.to_numeric(_col(final, "m.index.lines")).max()) if len(final) else math.nan,
        "index.max_bytes": float(pd.to_numeric(_col(final, "m.index.bytes")).max()) if len(final) else math.nan,
        "index.max_line_chars": float(pd.to_numeric(_col(final, "m.index.max_line_chars")).max()) if len(final) else math.nan,
        "index.within_limits": _mean(_col(final, "m.index.within").astype(float)) if len(final) else math.nan,
        "latency.recall_ms.p50": float(latency.quantile(0.5)) if len(latency) else math.nan,
        "latency.recall_ms.p95": float(latency.quantile(0.95)) if len(latency) else math.nan,
        "llm.calls": float(pd.to_numeric(rows.column("tok.calls")).sum()),
        "llm.tokens.input": float(pd.to_numeric(rows.column("tok.input")).sum()),
        "llm.tokens.output": float(pd.to_numeric(rows.column("tok.output")).sum()),
        "llm.replayed": float(pd.to_numeric(rows.column("tok.replayed")).sum()),
    }
    costs = pd.to_numeric(rows.column("tok.cost_usd"), errors="coerce").dropna()
    out["llm.cost_usd"] = float(costs.sum()) if len(costs) else math.nan  # nan → null: no priced call
    fallbacks = _col(rec, "fallback_reason").dropna()
    out["recall.fallbacks"] = float(len(fallbacks))
    from harness.plugins import REGISTRY

    for name, plugin in sorted(REGISTRY.items()):  # a plugin metric: its mean over the probes of its kind
        out[name] = _mean(_col(rows.kind(plugin.kind), "m." + plugin.key))
    misses = pd.to_numeric(_col(rec, "m.quality_miss"), errors="coerce").dropna()  # only recalls a real model chose
    out["recall.quality_misses"] = float(misses.sum()) if len(misses) else math.nan
    return {k: (None if isinstance(v, float) and math.isnan(v) else round(v, 6)) for k, v in out.items()}


def probe_success(frame: pd.DataFrame) -> pd.Series:
    """Binary per-probe success for McNemar: every expected fact found (recall = 1) and, for abstention
    probes, nothing selected."""
    abst = pd.to_numeric(_col(frame, "m.abstention"), errors="coerce")
    rec = pd.to_numeric(_col(frame, "m.recall"), errors="coerce")
    return abst.where(abst.notna(), rec).fillna(0.0) >= 1.0


def paired(frame_a: pd.DataFrame, frame_b: pd.DataFrame, a: str, b: str) -> list[Comparison]:
    """Paired comparisons of recall probes shared by two frames (joined on scenario and step)."""
    keys = ["scenario", "step"]
    # only the columns compared: the join copies every column it carries (the query and selection texts were
    # most of the evaluation's peak memory, issue 34)
    wanted = [*keys, *(c for c in (*map(_probe_column, compared_metrics()), "m.model_answered")
                       if c in frame_a.columns or c in frame_b.columns)]
    ra, rb = (_recalls(f, wanted) for f in (frame_a, frame_b))
    if ra.empty or rb.empty:
        return []
    joined = _real_model_rows(ra.merge(rb, on=keys, suffixes=("_a", "_b")))
    out = []
    for metric in compared_metrics():
        col = _probe_column(metric)
        if f"{col}_a" not in joined.columns:
            continue
        both = joined[[f"{col}_a", f"{col}_b", "ok_a", "ok_b"]].dropna(subset=[f"{col}_a", f"{col}_b"])
        if both.empty:
            continue
        out.append(compare(a, b, metric, both[f"{col}_a"].astype(float).tolist(), both[f"{col}_b"].astype(float).tolist(),
                           both["ok_a"].astype(bool).tolist(), both["ok_b"].astype(bool).tolist()))
    return out


def _recalls(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """The recall rows of ``frame``, only ``columns`` (those it has) and ``ok`` (:func:`probe_success`)."""
    rows = frame.loc[frame["kind"] == "recall", [c for c in columns if c in frame.columns]]  # no other column copied
    return rows.assign(ok=probe_success(rows))


def _real_model_rows(joined: pd.DataFrame) -> pd.DataFrame:
    """Where a column is a model strategy, only the probes a real model answered in either column: a scripted
    reply (a scenario's own ``scripted_model``) or a step the model never saw says nothing about a model, so it
    neither shrinks nor widens the comparison. ``m.model_answered`` is 1 or 0 on every model-strategy recall probe
    (``_quality``); probes without it (other strategies, runs from before it existed) are kept."""
    marks = [c for c in ("m.model_answered", "m.model_answered_a", "m.model_answered_b") if c in joined.columns]
    if not marks:
        return joined
    values = joined[marks].apply(pd.to_numeric, errors="coerce")
    scripted_only = (values == 0).any(axis=1) & ~(values == 1).any(axis=1)
    return joined[~scripted_only]


def changed_probes(frame_a: pd.DataFrame, frame_b: pd.DataFrame, metric: str = "m.f1") -> list[ChangedProbe]:
    """Recall probes whose selection or metric differs between two frames."""
    keys = ["scenario", "step", "strategy"]
    if frame_a.empty or frame_b.empty:
        return []
    ra, rb = frame_a[frame_a["kind"] == "recall"], frame_b[frame_b["kind"] == "recall"]
    if ra.empty or rb.empty:
        return []
    joined = ra.merge(rb, on=keys, suffixes=("_a", "_b"))
    rows = []
    for _, row in joined.iterrows():
        # NaN (no data) on both sides is no change: NaN != NaN would list probes where nothing visible changed
        if row["selected_a"] != row["selected_b"] or _opt(row.get(f"{metric}_a")) != _opt(row.get(f"{metric}_b")):
            rows.append(ChangedProbe(row["scenario"], int(row["step"]), row["strategy"], row["query_a"],
                                     tuple(row["selected_a"]), tuple(row["selected_b"]),
                                     _opt(row.get(f"{metric}_a")), _opt(row.get(f"{metric}_b"))))
    return sorted(rows, key=lambda r: (r.harm, r.scenario, r.step, r.strategy), reverse=True)


def _opt(value: Any) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def scenario_counts(results: Iterable[ScenarioResult]) -> ScenarioCounts:
    """total / passed / failed / errors / skipped."""
    return _counts([r.status for r in results])


def _counts(statuses: Sequence[str]) -> ScenarioCounts:
    return ScenarioCounts(total=len(statuses), passed=statuses.count("passed"), failed=statuses.count("failed"),
                          errors=statuses.count("error"), skipped=statuses.count("skipped"))


def all_probes(results: Sequence[ScenarioResult]) -> Iterator[Probe]:
    """Every probe, one result at a time (a run's results are read back from disk: never all held at once)."""
    return (p for r in results for p in r.probes)


def summarize(results: Sequence[ScenarioResult],
              strategies: Sequence[str]) -> tuple[dict[str, StrategySummary], list[Comparison]]:
    """Per-strategy scenario counts and metrics, plus paired comparisons between every pair of strategies."""
    # each strategy's probes as a frame per kind, built in one pass: one frame of every column on every row, its
    # copies filtered by kind and the comparisons' copies were the evaluation's peak (issue 34)
    tally: dict[str, tuple[list[str], array[float], array[float]]] = {}  # times as 8-byte values, not float objects

    def probes() -> Iterator[Probe]:  # one pass over the results (read back from disk): the probes and the tallies
        for r in results:
            statuses, total, system = tally.setdefault(r.strategy, ([], array("d"), array("d")))
            statuses.append(r.status)
            total.append(r.duration_ms)
            system.append(_system_ms(r))
            yield from r.probes

    parts = kind_parts(probes(), strategies)
    block: dict[str, StrategySummary] = {}
    recalls: dict[str, pd.DataFrame] = {}
    for strategy in strategies:
        part = parts.pop(strategy)
        statuses, total, system = tally.get(strategy, ([], array("d"), array("d")))
        metrics = strategy_metrics(part) if not part.empty else {}
        if metrics:
            metrics.update(_overhead(sum(total), sum(system)))
        block[strategy] = StrategySummary(_counts(statuses), metrics)
        recalls[strategy] = part.kind("recall")  # all the comparisons read; the other kinds' rows are let go
    comparisons: list[Comparison] = []
    for i, a in enumerate(strategies):
        for b in strategies[i + 1:]:
            (sa, ya), (sb, yb) = split_column(a), split_column(b)
            if sa != sb and ya != yb:
                continue  # strategies within one system, or one strategy across systems: never both differ
            comparisons += paired(recalls[a], recalls[b], a, b)
    return block, comparisons


def overhead(results: Sequence[ScenarioResult]) -> dict[str, float | None]:
    """Time spent inside calls into the system (its construction, seeds, operations, reads, close) vs the harness's
    own work around them (replay, coverage, telemetry, the temporary directory). A run from before the harness
    timed every call has only its graded operations' time to count."""
    return _overhead(sum(r.duration_ms for r in results), sum(_system_ms(r) for r in results))


def _system_ms(result: ScenarioResult) -> float:
    return result.system_ms if result.system_ms is not None else sum(p.duration_ms for p in result.probes if p.graded)


def _overhead(total: float, system: float) -> dict[str, float | None]:
    return {"harness.system_ms": round(system, 3), "harness.overhead_ms": round(max(0.0, total - system), 3)}



def per_scenario_means(results: Sequence[ScenarioResult], metric: str) -> list[tuple[str, dict[str, float | None]]]:
    """Per scenario, per strategy: the mean of a recall-probe metric (the report's per-scenario charts)."""
    by: dict[str, dict[str, float | None]] = {}
    for r in results:
        if (mean := recall_mean(r, metric)) is not None:
            by.setdefault(r.scenario, {})[r.strategy] = mean
    return sorted(by.items())


def recall_mean(result: ScenarioResult, metric: str) -> float | None:
    """The mean of a metric over one result's graded recall probes; None when none has it."""
    vals = [v for p in result.probes if p.kind == "recall" and p.graded and (v := p.metric(metric)) is not None]
    return sum(vals) / len(vals) if vals else None
