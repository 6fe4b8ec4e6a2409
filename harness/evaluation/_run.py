"""Evaluate a finished run: summarise, compare with a baseline run, apply the gates → one ``RunSummary``."""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from harness.errors import HarnessError
from harness.evaluation._gates import Gate, evaluate, lower_is_better
from harness.evaluation._parts import probe_frame
from harness.evaluation._records import BaselineComparison, Flip, RunSummary, SuiteDelta, Verdict
from harness.evaluation._stats import Comparison, p_text
from harness.evaluation._summary import all_probes, changed_probes, compared_metrics, paired, summarize
from harness.replay import ScenarioResult

SUITE_METRICS: Final = ("dedupe.residual_duplicates", "dedupe.retention", "forget.precision", "forget.recall",
                         "index.within_limits", "index.max_line_chars")
"""Headline metrics compared suite-wide (no per-probe pairing)."""


class IncompleteComparison(HarnessError):
    """A baseline comparison between runs that did not both run the whole suite."""


def worse(metric: str, delta: float) -> bool:
    return delta > 0 if lower_is_better(metric) else delta < 0


def _flips(base: Sequence[ScenarioResult], cand: Sequence[ScenarioResult]) -> list[Flip]:
    """Every scenario and probe that passed in the baseline and does not now: failed, errored, skipped (a system
    that stopped declaring a capability loses checks) or missing. A probe that passed counts even when its
    scenario failed in the baseline for another reason."""
    now = {(r.scenario, r.strategy): r for r in cand}
    out: list[Flip] = []
    for b in base:
        c = now.get((b.scenario, b.strategy))
        if c is None:
            if b.status == "passed":
                out.append(Flip(b.scenario, b.strategy, None, "scenario", "missing", "not in the candidate run"))
            continue
        whole = Flip(b.scenario, b.strategy, None, "scenario", c.status, c.error_text or c.skipped or "; ".join(c.failures))
        if c.status in ("error", "skipped"):
            if b.status == "passed":
                out.append(whole)  # reported for the scenario as a whole
            continue
        steps: list[Flip] = []
        probes = {p.step: p for p in c.probes}
        for p in b.probes:
            if not (p.passed and p.graded):
                continue
            q = probes.get(p.step)
            if q is None or not q.graded or not q.passed:
                now_status = "missing" if q is None else "skipped" if not q.graded else "failed"
                detail = (q.skipped or "") if q is not None and not q.graded else \
                    next((f for f in c.failures if f.startswith(f"step {p.step} ")), "")
                steps.append(Flip(b.scenario, b.strategy, p.step, p.kind, now_status, detail))
        # a failed scenario is one flip per check that flipped; itself only when no graded step explains it
        out += steps if steps or not (b.status == "passed" and c.status == "failed") else [whole]
    return out


def _verdicts(strategies: Sequence[str], comps: Sequence[Comparison], suite: Sequence[SuiteDelta],
              flips: Sequence[Flip]) -> list[Verdict]:
    out = []
    for strategy in strategies:
        mine = [c for c in comps if c.b == strategy]
        down = [c for c in mine if c.significant and worse(c.metric, c.delta)]  # the metric's direction; CI and p
        up = [c for c in mine if c.significant and not worse(c.metric, c.delta)]
        mine_suite = [d for d in suite if d.strategy == strategy and d.metric in SUITE_METRICS]
        lost = [d for d in suite if d.strategy == strategy and d.base is not None and d.cand is None]
        sdown = [d for d in mine_suite if d.delta is not None and worse(d.metric, d.delta)] + lost
        sup = [d for d in mine_suite if d.delta is not None and d.delta != 0 and not worse(d.metric, d.delta)]
        nflip = sum(f.strategy == strategy for f in flips)
        verdict = "worse" if down or sdown or nflip else "better" if up or sup else "no detectable change"
        # the reasons for the verdict first; a worse run's significant gains after them, labelled as gains
        parts = [f"{nflip} check(s) flipped from pass to fail"] if nflip else []
        parts += [_effect(c) for c in (down or up or [c for c in mine if c.metric == "recall.f1"])]
        parts += [f"{d.metric} {_value(d.base)} → {_value(d.cand)}" for d in (sdown or sup)]
        if verdict == "worse" and not (down or sdown) and (up or sup):
            parts[1:] = ["while better on " + "; ".join(parts[1:])]
        out.append(Verdict(strategy, verdict, f"{strategy}: {verdict}" + (f" — {'; '.join(parts)}" if parts else "")))
    return out


def _value(x: float | None) -> str:
    """A suite-level value in a verdict: "no data" for a metric nothing measured (never "None"), else ``:g``."""
    return "no data" if x is None else f"{x:g}"


def _effect(c: Comparison) -> str:
    sig = "significant" if c.significant else "not significant"
    mde = f"; the smallest detectable effect is ±{c.mde:.3g}" if not c.significant and math.isfinite(c.mde) else ""
    return (f"{c.metric} {c.delta:+.3f} (95% CI {c.ci95[0]:+.3f} to {c.ci95[1]:+.3f}, {p_text(c.p_value, prefix='p')}, "
            f"n={c.n}, {sig}{mde})")


def compare_runs(base_results: Sequence[ScenarioResult], cand_results: Sequence[ScenarioResult], *,
                 base_dir: Path | str = "", base_summary: RunSummary | None = None,
                 cand_incomplete: Sequence[str] = ()) -> BaselineComparison:
    """Paired comparisons per strategy the two runs share, suite-level deltas, flips, changed probes (most harmful
    first) and a verdict per strategy. Refuses (``IncompleteComparison``) when either run is incomplete."""
    base_incomplete = [f"{r.scenario} [{r.strategy}]" for r in base_results if r.status == "error"]
    if base_incomplete or cand_incomplete:
        which = "baseline" if base_incomplete else "candidate"
        runs = base_incomplete or list(cand_incomplete)
        raise IncompleteComparison(
            f"cannot compare against the baseline: the {which} run is incomplete ({len(runs)} scenario run(s) could "
            f"not finish, e.g. {runs[0]}); comparing a partial suite with a complete one would report made-up changes")
    fa = probe_frame(all_probes(base_results))
    fb = probe_frame(all_probes(cand_results))
    comps: list[Comparison] = []
    # strategies both runs ran (even if every probe of one is skipped now: that must show as lost metrics)
    shared = sorted({r.strategy for r in base_results} & {r.strategy for r in cand_results})
    for strategy in shared:
        if not fa.empty and not fb.empty:
            comps += paired(fa[fa["strategy"] == strategy], fb[fb["strategy"] == strategy], strategy, strategy)
    base_block = base_summary.strategies if base_summary else summarize(base_results, shared)[0]
    cand_block, _ = summarize(cand_results, shared)
    suite = [SuiteDelta(s, m, base_block[s].metrics.get(m) if s in base_block else None, cand_block[s].metrics.get(m))
             for s in shared for m in (*SUITE_METRICS, *compared_metrics())]
    flips = _flips(base_results, cand_results)
    return BaselineComparison(str(base_dir), tuple(comps), tuple(changed_probes(fa, fb)), tuple(flips), tuple(suite),
                              tuple(_verdicts(shared, comps, suite, flips)))


def evaluate_run(results: Sequence[ScenarioResult], strategies: Sequence[str], *, gates: Sequence[Gate] = (),
                 baseline: BaselineComparison | None = None, meta: Mapping[str, Any] | None = None,
                 fuzz: Mapping[str, Any] | None = None, run_id: str | None = None,
                 system: str = "reference") -> RunSummary:
    """The run's summary: metrics per strategy, comparisons, gate results, the verdict."""
    block, comparisons = summarize(results, strategies)
    gate_results = evaluate(gates, block, comparisons=comparisons, baseline=baseline, system=system)
    incomplete = tuple(f"{r.scenario} [{r.strategy}]" for r in results if r.status == "error")
    passed = all(g.passed for g in gate_results) and not incomplete
    return RunSummary(
        run_id=run_id or uuid.uuid4().hex[:12], created_at=datetime.now(UTC).isoformat(), strategies=block,
        comparisons=tuple(comparisons), gates=tuple(gate_results), passed=passed, meta=dict(meta or {}),
        baseline=baseline, fuzz=dict(fuzz) if fuzz is not None else None, incomplete=incomplete,
    )

