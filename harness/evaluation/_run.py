"""Evaluate a finished run: summarise, compare with a baseline run, apply the gates → one ``RunSummary``."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.evaluation._gates import Gate, evaluate
from harness.evaluation._records import BaselineComparison, RunSummary
from harness.evaluation._stats import Comparison
from harness.evaluation._summary import all_probes, changed_probes, paired, probe_frame, summarize
from harness.replay import ScenarioResult


def compare_runs(base_results: Sequence[ScenarioResult], cand_results: Sequence[ScenarioResult], *,
                 base_dir: Path | str = "") -> BaselineComparison:
    """Paired comparisons per strategy the two runs share, and the recall probes that changed."""
    fa = probe_frame(all_probes(base_results))
    fb = probe_frame(all_probes(cand_results))
    comps: list[Comparison] = []
    shared = sorted(set(fb["strategy"]) & set(fa["strategy"])) if not fa.empty and not fb.empty else []
    for strategy in shared:
        comps += paired(fa[fa["strategy"] == strategy], fb[fb["strategy"] == strategy], strategy, strategy)
    return BaselineComparison(str(base_dir), tuple(comps), tuple(changed_probes(fa, fb)))


def evaluate_run(results: Sequence[ScenarioResult], strategies: Sequence[str], *, gates: Sequence[Gate] = (),
                 baseline: BaselineComparison | None = None, meta: Mapping[str, Any] | None = None,
                 fuzz: Mapping[str, Any] | None = None, run_id: str | None = None) -> RunSummary:
    """The run's summary: metrics per strategy, comparisons, gate results, the verdict."""
    block, comparisons = summarize(results, strategies)
    gate_results = evaluate(gates, block, comparisons=comparisons,
                            baseline=baseline.comparisons if baseline else ())
    passed = all(g.passed for g in gate_results) and not any(r.status == "error" for r in results)
    return RunSummary(
        run_id=run_id or uuid.uuid4().hex[:12], created_at=datetime.now(UTC).isoformat(), strategies=block,
        comparisons=tuple(comparisons), gates=tuple(gate_results), passed=passed, meta=dict(meta or {}),
        baseline=baseline, fuzz=dict(fuzz) if fuzz is not None else None,
    )
