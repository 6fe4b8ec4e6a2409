"""A run's summary reads each strategy's probes as a frame per kind (issue 34: one frame of every column on every
row, and its copies filtered by kind, were the evaluation's peak memory). The numbers must be the ones the whole
frame gives: every metric of every strategy, and every paired comparison, for any mix of probes."""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.evaluation import probe_frame, strategy_metrics, summarize
from harness.evaluation._parts import kind_parts
from harness.evaluation._summary import paired
from harness.replay import Probe, ScenarioResult, TokenUsage

STRATEGIES = ("heuristic", "heuristic@sqlite", "model")
NUMBER = st.one_of(st.none(), st.booleans(), st.integers(0, 9), st.floats(0, 1), st.just(math.nan))
RECALL = ("precision", "recall", "f1", "mrr", "ndcg", "abstention", "quality_miss", "model_answered")
DREAM = ("residual_duplicates", "retention", "deduped")
CHECK = ("index.lines", "index.bytes", "index.max_line_chars", "index.within", "residual_duplicates")


@st.composite
def a_probe(draw: Any, scenario: str, step: int, strategy: str) -> Probe:
    kind = draw(st.sampled_from(["recall", "recall", "dream", "forget", "check", "extract"]))
    names = {"recall": RECALL, "dream": DREAM, "forget": ("precision", "recall"), "check": CHECK}.get(kind, ("n",))
    flat = draw(st.dictionaries(st.sampled_from(names), NUMBER, max_size=len(names)))
    metrics: dict[str, Any] = {k: v for k, v in flat.items() if not k.startswith("index.")}
    index = {k.split(".", 1)[1]: v for k, v in flat.items() if k.startswith("index.")}
    if index:
        metrics["index"] = index
    tokens = TokenUsage(calls=draw(st.integers(0, 2)), input=draw(st.integers(0, 50)), output=draw(st.integers(0, 5)),
                        cost_usd=draw(st.none() | st.floats(0, 0.01)))
    return Probe(scenario=scenario, step=step, kind=kind, strategy=strategy, metrics=metrics,
                 duration_ms=draw(st.floats(0, 50)), tokens=tokens,
                 fallback_reason=draw(st.none() | st.sampled_from(["timeout", "no model"])) if kind == "recall" else None,
                 final=kind == "check" and draw(st.booleans()), skipped=draw(st.none() | st.just("lacks forget")))


@st.composite
def runs(draw: Any) -> list[ScenarioResult]:
    """Results of a few scenarios under up to three strategies; a strategy's probes share (scenario, step) keys
    with the others' often, so the comparisons pair rows."""
    chosen = draw(st.lists(st.sampled_from(STRATEGIES), min_size=1, max_size=3, unique=True))
    results = []
    for i in range(draw(st.integers(0, 5))):
        for strategy in chosen:
            steps = draw(st.lists(st.integers(0, 6), max_size=6, unique=True))
            probes = tuple(draw(a_probe(f"s{i}", step, strategy)) for step in steps)
            results.append(ScenarioResult(scenario=f"s{i}", strategy=strategy, passed=True, failures=(), probes=probes,
                                          trace_id="t", duration_ms=draw(st.floats(0, 99))))
    return results


@settings(max_examples=100, deadline=None)
@given(runs())
def test_the_summary_by_kind_is_the_whole_frames_summary(results: list[ScenarioResult]) -> None:
    strategies = tuple(dict.fromkeys(r.strategy for r in results)) or ("heuristic",)
    block, comparisons = summarize(results, strategies)
    whole = probe_frame(p for r in results for p in r.probes)
    frames = {s: whole[whole["strategy"] == s].reset_index(drop=True) if not whole.empty else whole for s in strategies}
    for s in strategies:
        expected = strategy_metrics(frames[s]) if not frames[s].empty else {}
        got = {k: v for k, v in block[s].metrics.items() if not k.startswith("harness.")}
        assert got == expected, s
    expected_comparisons = [c for i, a in enumerate(strategies) for b in strategies[i + 1:]
                            for c in paired(frames[a], frames[b], a, b)]
    assert json.dumps([c.to_dict() for c in comparisons]) == json.dumps([c.to_dict() for c in expected_comparisons])


@settings(max_examples=50, deadline=None)
@given(runs())
def test_a_column_read_from_the_parts_is_the_whole_frames_column(results: list[ScenarioResult]) -> None:
    strategies = tuple(dict.fromkeys(r.strategy for r in results))
    parts = kind_parts((p for r in results for p in r.probes), strategies)
    whole = probe_frame(p for r in results for p in r.probes)
    for s in strategies:
        frame = whole[whole["strategy"] == s].reset_index(drop=True)
        for name in ("tok.calls", "tok.cost_usd", "duration_ms", "m.precision", "m.index.lines", "nothing"):
            want = frame[name] if name in frame.columns else pd.Series(dtype=float)
            got = parts[s].column(name)  # no row of this strategy has it: empty here, all NaN in the whole frame
            assert len(got) in (0, len(frame))
            pd.testing.assert_series_equal(got.reindex(range(len(frame))), want.reindex(range(len(frame))),
                                           check_names=False, check_dtype=False, check_index_type=False)
        final = frame[frame["final"].fillna(0.0).astype(bool)] if "final" in frame.columns else frame.iloc[0:0]
        assert list(zip(parts[s].final()["scenario"], parts[s].final()["step"], strict=True)) == \
            list(zip(final["scenario"], final["step"], strict=True))
