from __future__ import annotations

import math
import random

import numpy as np
import pytest

from harness.errors import GateFileError
from harness.evaluation import (
    BaselineComparison,
    Comparison,
    Gate,
    ScenarioCounts,
    StrategySummary,
    bootstrap_ci,
    compare,
    evaluate,
    load_gates,
    mcnemar_exact,
    minimum_detectable_effect,
    probe_frame,
    strategy_metrics,
)
from harness.replay import Probe, recall_metrics

A, B, C = frozenset({"a"}), frozenset({"b"}), frozenset()


def test_recall_metrics_hand_computed() -> None:
    m = recall_metrics([C, A, B], frozenset({"a", "b", "z"}), k=5, relevant_in_store=2)
    assert m["precision"] == pytest.approx(2 / 3)
    assert m["recall"] == pytest.approx(2 / 3)
    assert m["f1"] == pytest.approx(2 / 3)
    assert m["mrr"] == pytest.approx(1 / 2)
    dcg = 1 / math.log2(3) + 1 / math.log2(4)
    idcg = 1 + 1 / math.log2(3)
    assert m["ndcg"] == pytest.approx(dcg / idcg)
    assert m["abstention"] is None


def test_recall_metrics_empty_cases() -> None:
    # an abstention probe feeds abstention only: no recall of 1.0 hidden in the headline recall (issue 32)
    assert recall_metrics([], frozenset(), k=5, relevant_in_store=0) == {
        "precision": None, "recall": None, "f1": None, "mrr": None, "ndcg": None, "abstention": 1.0}
    abstain_fail = recall_metrics([A], frozenset(), k=5, relevant_in_store=0)
    assert abstain_fail == {"precision": None, "recall": None, "f1": None, "mrr": None, "ndcg": None,
                            "abstention": 0.0}
    miss = recall_metrics([], frozenset({"a"}), k=5, relevant_in_store=1)
    assert (miss["precision"], miss["recall"], miss["mrr"], miss["ndcg"]) == (1.0, 0.0, 0.0, 0.0)


def _reference_mrr_ndcg(rels: list[int], n_relevant: int, k: int) -> tuple[float, float]:
    """An independent implementation: numpy arrays, no shared code with harness.coverage."""
    arr = np.array(rels[:k], dtype=float)
    ranks = np.nonzero(np.array(rels))[0]
    mrr = 1.0 / (ranks[0] + 1) if ranks.size else 0.0
    discounts = 1.0 / np.log2(np.arange(2, arr.size + 2))
    dcg = float((arr * discounts).sum())
    ideal = np.zeros(k)
    ideal[: min(k, max(n_relevant, 1))] = 1
    idcg = float((ideal * (1.0 / np.log2(np.arange(2, k + 2)))).sum())
    return mrr, dcg / idcg


def test_mrr_and_ndcg_match_a_reference_on_random_rankings() -> None:
    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(0, 8)
        rels = [rng.random() < 0.4 for _ in range(n)]
        covers = [A if r else C for r in rels]
        k = rng.randint(1, 8)
        n_rel = max(sum(rels), rng.randint(1, 4))
        m = recall_metrics(covers, frozenset({"a"}), k=k, relevant_in_store=n_rel)
        mrr, ndcg = _reference_mrr_ndcg([int(r) for r in rels], n_rel, k)
        assert m["mrr"] == pytest.approx(mrr)
        assert m["ndcg"] == pytest.approx(ndcg)


def test_bootstrap_is_reproducible_and_brackets_the_mean() -> None:
    deltas = [0.1, 0.3, -0.1, 0.2, 0.0, 0.4, 0.1]
    low, high = bootstrap_ci(deltas)
    assert (low, high) == bootstrap_ci(deltas)
    assert low < float(np.mean(deltas)) < high
    assert bootstrap_ci([0.0, 0.0]) == (0.0, 0.0)


def test_mcnemar_exact_values() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(0, 6) == pytest.approx(2 * 0.5**6)
    assert mcnemar_exact(3, 3) == 1.0


def test_mcnemar_exact_agrees_with_scipy_binomial_cdf() -> None:
    # the exact two-sided test at p = 1/2 is min(1, 2 * P(X <= min(b, c))), X ~ Binomial(b + c, 1/2); scipy.special's
    # binomial CDF (Cephes) is the oracle: scipy.stats.binomtest says the same at a 1.3 s import and 1 ms a call
    from scipy.special import bdtr

    for n in [*range(1, 41), 99, 200]:
        for b in range(n + 1):
            want = min(1.0, 2.0 * float(bdtr(min(b, n - b), n, 0.5)))
            assert mcnemar_exact(b, n - b) == pytest.approx(want, rel=1e-9, abs=1e-300), (b, n - b)


def test_compare_counts_and_mde() -> None:
    c = compare("h", "m", "recall.f1", [0.5, 0.5, 1.0, 0.0], [1.0, 0.5, 0.0, 0.5], [False, False, True, False],
                [True, False, False, False])
    assert (c.wins, c.ties, c.losses, c.n) == (2, 1, 1, 4)
    assert (c.mcnemar_b, c.mcnemar_c) == (1, 1)
    assert c.delta == pytest.approx(0.0)
    assert c.mde > 0
    assert minimum_detectable_effect([0.1], 0.5) == math.inf


def test_strategy_metrics_from_probes() -> None:
    probes = [
        {"scenario": "s", "step": 0, "kind": "recall", "strategy": "h", "duration_ms": 2.0,
         "metrics": {"precision": 1.0, "recall": 0.5, "f1": 2 / 3, "mrr": 1.0, "ndcg": 1.0, "abstention": None},
         "tokens": {"calls": 1, "input": 10, "output": 2, "replayed": 1}},
        {"scenario": "s", "step": 1, "kind": "recall", "strategy": "h", "duration_ms": 4.0,
         "metrics": {"precision": 0.0, "recall": 1.0, "f1": 0.0, "mrr": None, "ndcg": None, "abstention": 0.0},
         "tokens": {"calls": 0, "input": 0, "output": 0, "replayed": 0}},
        {"scenario": "s", "step": 2, "kind": "dream", "strategy": "h", "duration_ms": 1.0,
         "metrics": {"residual_duplicates": 2, "retention": 0.5}, "tokens": {"calls": 0, "input": 0, "output": 0}},
        {"scenario": "s", "step": 3, "kind": "check", "strategy": "h", "duration_ms": 0.0, "final": True,
         "metrics": {"index.lines": 3, "index.bytes": 90, "index.max_line_chars": 40, "index.within": True},
         "tokens": {"calls": 0, "input": 0, "output": 0}},
    ]
    m = strategy_metrics(probe_frame([Probe.from_row(p) for p in probes]))
    assert m["recall.precision"] == 0.5
    assert m["recall.recall"] == 0.75
    assert m["recall.mrr"] == 1.0  # the abstention probe has no MRR
    assert m["recall.abstention_accuracy"] == 0.0
    assert (m["dedupe.residual_duplicates"], m["dedupe.retention"]) == (2.0, 0.5)
    assert (m["index.max_lines"], m["index.max_bytes"], m["index.within_limits"]) == (3.0, 90.0, 1.0)
    assert m["latency.recall_ms.p50"] == 3.0
    assert (m["llm.calls"], m["llm.tokens.input"], m["llm.tokens.output"]) == (1.0, 10.0, 2.0)


def test_gates_absolute_regression_and_skipped(tmp_path) -> None:  # type: ignore[no-untyped-def]
    summary = {"heuristic": StrategySummary(ScenarioCounts(), {"recall.precision": 0.6})}
    gates = [Gate("recall.precision", "heuristic", min=0.5), Gate("recall.precision", min=0.7),
             Gate("scenarios.failed", max=0), Gate("recall.precision", "model", min=0.1),
             Gate("recall.f1", "heuristic", max_drop=0.02, vs="baseline")]
    row = {"metric": "recall.f1", "b": "heuristic", "a": "heuristic", "delta": -0.1, "ci95": [-0.2, -0.05],
           "n": 30, "p_value": 0.01, "mean_a": 0.5, "mean_b": 0.4, "wins": 0, "ties": 20, "losses": 10,
           "mcnemar_b": 3, "mcnemar_c": 0, "mcnemar_p": 0.25, "mde": 0.1}
    base = BaselineComparison("base", (Comparison.from_dict(row),), ())
    flips, *results = evaluate(gates, summary, baseline=base)
    assert (flips.name, flips.passed) == ("no check flips from pass to fail vs baseline", True)
    assert [r.passed for r in results] == [True, False, True, True, False]
    assert results[3].skipped
    assert "95% CI [-0.2000, -0.0500]" in results[4].detail
    noisy = BaselineComparison("base", (Comparison.from_dict({**row, "ci95": [-0.2, 0.05]}),), ())
    assert evaluate(gates[4:], summary, baseline=noisy)[1].passed  # [0] is the built-in no-flips gate
    bad = tmp_path / "g.toml"
    bad.write_text('[[gate]]\nmetric = "x"\nminimum = 1\n')
    with pytest.raises(GateFileError, match=r"g\.toml:\d+: gate 1: unknown key 'minimum'"):
        load_gates(bad)
    bad.write_text("[[gate]\n")
    with pytest.raises(GateFileError, match="invalid TOML"):
        load_gates(bad)


@pytest.mark.parametrize("n", [7, 333, 2001])
def test_bootstrap_block_size(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    """The resamples are drawn in blocks (issue 34: memory); the CI and p-value do not depend on the block's size."""
    from harness.evaluation import _stats

    deltas = list(np.random.default_rng(n).normal(0.05, 1.0, size=n))
    got = []
    for block in (1 << 12, 1 << 14, 1 << 18, 1 << 20):
        monkeypatch.setattr(_stats, "_BLOCK", block)
        got.append(_stats.bootstrap(deltas))
    assert all(g == got[0] for g in got)
