"""Turn probe records into the gateable numbers (DESIGN §4 ``summary.json``, §5 definitions) with pandas."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from harness.replay import ScenarioResult
from harness.stats import PairedComparison, compare

COMPARED_METRICS = ("recall.f1", "recall.precision", "recall.recall", "recall.mrr")


def probe_frame(probes: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """One row per probe; ``metrics`` and ``tokens`` flattened to ``m.<name>`` and ``tok.<name>`` columns."""
    if not probes:
        return pd.DataFrame(columns=["scenario", "step", "kind", "strategy"])
    frame = pd.json_normalize(list(probes), sep=".")
    return frame.rename(columns=lambda c: c.replace("metrics.", "m.").replace("tokens.", "tok."))


def _mean(series: pd.Series) -> float:
    values = pd.to_numeric(series, errors="coerce").dropna()
    return float(values.mean()) if len(values) else math.nan


def _col(frame: pd.DataFrame, name: str) -> pd.Series:
    return frame[name] if name in frame.columns else pd.Series(dtype=float)


def strategy_metrics(frame: pd.DataFrame) -> dict[str, float]:
    """The DESIGN §4 metric block for one strategy's probes."""
    rec = frame[frame["kind"] == "recall"]
    dream = frame[frame["kind"] == "dream"]
    final = frame[_col(frame, "final").fillna(value=False).astype(bool)] if "final" in frame.columns else frame.iloc[0:0]
    forget = frame[frame["kind"] == "forget"]
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
        "dedupe.residual_duplicates": float(residual.sum()) if len(residual) else 0.0,
        "dedupe.retention": _mean(_col(dream, "m.retention")) if len(dream) else 1.0,
        "dedupe.dreams_run": float(len(residual)),
        "forget.precision": _mean(_col(forget, "m.precision")),
        "forget.recall": _mean(_col(forget, "m.recall")),
        "index.max_lines": float(pd.to_numeric(_col(final, "m.index.lines")).max()) if len(final) else 0.0,
        "index.max_bytes": float(pd.to_numeric(_col(final, "m.index.bytes")).max()) if len(final) else 0.0,
        "index.max_line_chars": float(pd.to_numeric(_col(final, "m.index.max_line_chars")).max()) if len(final) else 0.0,
        "index.within_limits": _mean(_col(final, "m.index.within").astype(float)) if len(final) else 1.0,
        "latency.recall_ms.p50": float(latency.quantile(0.5)) if len(latency) else 0.0,
        "latency.recall_ms.p95": float(latency.quantile(0.95)) if len(latency) else 0.0,
        "llm.calls": float(pd.to_numeric(_col(frame, "tok.calls")).sum()),
        "llm.tokens.input": float(pd.to_numeric(_col(frame, "tok.input")).sum()),
        "llm.tokens.output": float(pd.to_numeric(_col(frame, "tok.output")).sum()),
        "llm.replayed": float(pd.to_numeric(_col(frame, "tok.replayed")).sum()),
    }
    costs = pd.to_numeric(_col(frame, "tok.cost_usd"), errors="coerce").dropna()
    out["llm.cost_usd"] = float(costs.sum()) if len(costs) else math.nan  # nan → null: no priced call
    fallbacks = _col(rec, "fallback_reason").dropna()
    out["recall.fallbacks"] = float(len(fallbacks))
    return {k: (None if isinstance(v, float) and math.isnan(v) else round(v, 6)) for k, v in out.items()}  # type: ignore[misc]


def probe_success(frame: pd.DataFrame) -> pd.Series:
    """Binary per-probe success for McNemar: every expected fact found (recall = 1) and, for abstention
    probes, nothing selected."""
    abst = pd.to_numeric(_col(frame, "m.abstention"), errors="coerce")
    rec = pd.to_numeric(_col(frame, "m.recall"), errors="coerce")
    return abst.where(abst.notna(), rec).fillna(0.0) >= 1.0


def paired(frame_a: pd.DataFrame, frame_b: pd.DataFrame, a: str, b: str) -> list[PairedComparison]:
    """Paired comparisons of recall probes shared by two frames (joined on scenario and step)."""
    keys = ["scenario", "step"]
    ra = frame_a[frame_a["kind"] == "recall"].assign(ok=lambda f: probe_success(f))
    rb = frame_b[frame_b["kind"] == "recall"].assign(ok=lambda f: probe_success(f))
    if ra.empty or rb.empty:
        return []
    joined = ra.merge(rb, on=keys, suffixes=("_a", "_b"))
    out = []
    for metric in COMPARED_METRICS:
        col = "m." + metric.split(".", 1)[1]
        if f"{col}_a" not in joined.columns:
            continue
        both = joined[[f"{col}_a", f"{col}_b", "ok_a", "ok_b"]].dropna(subset=[f"{col}_a", f"{col}_b"])
        if both.empty:
            continue
        out.append(compare(a, b, metric, both[f"{col}_a"].astype(float).tolist(), both[f"{col}_b"].astype(float).tolist(),
                           both["ok_a"].astype(bool).tolist(), both["ok_b"].astype(bool).tolist()))
    return out


def changed_probes(frame_a: pd.DataFrame, frame_b: pd.DataFrame, metric: str = "m.f1") -> list[dict[str, Any]]:
    """Recall probes whose selection or metric differs between two frames."""
    keys = ["scenario", "step", "strategy"]
    ra, rb = frame_a[frame_a["kind"] == "recall"], frame_b[frame_b["kind"] == "recall"]
    if ra.empty or rb.empty:
        return []
    joined = ra.merge(rb, on=keys, suffixes=("_a", "_b"))
    rows = []
    for _, row in joined.iterrows():
        if row["selected_a"] != row["selected_b"] or row.get(f"{metric}_a") != row.get(f"{metric}_b"):
            rows.append({"scenario": row["scenario"], "step": int(row["step"]), "strategy": row["strategy"],
                         "query": row["query_a"], "selected_base": row["selected_a"], "selected_cand": row["selected_b"],
                         "f1_base": row.get(f"{metric}_a"), "f1_cand": row.get(f"{metric}_b")})
    return rows


def scenario_counts(results: Sequence[ScenarioResult]) -> dict[str, int]:
    """total / passed / failed / errors."""
    return {"total": len(results), "passed": sum(r.status == "passed" for r in results),
            "failed": sum(r.status == "failed" for r in results), "errors": sum(r.status == "error" for r in results)}


def summarize(results: Sequence[ScenarioResult], strategies: Sequence[str]) -> dict[str, Any]:
    """Per-strategy scenario counts and metrics, plus paired comparisons between every pair of strategies."""
    frame = probe_frame([p for r in results for p in r.probes])
    block: dict[str, Any] = {}
    for strategy in strategies:
        part = frame[frame["strategy"] == strategy] if not frame.empty else frame
        block[strategy] = {"scenarios": scenario_counts([r for r in results if r.strategy == strategy]),
                           "metrics": strategy_metrics(part) if not part.empty else {}}
    comparisons = []
    for i, a in enumerate(strategies):
        for b in strategies[i + 1:]:
            fa, fb = frame[frame["strategy"] == a], frame[frame["strategy"] == b]
            comparisons += [c.as_dict() for c in paired(fa, fb, a, b)]
    return {"strategies": block, "comparisons": comparisons}
