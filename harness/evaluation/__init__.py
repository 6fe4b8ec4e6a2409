"""Stage 3 — evaluation: aggregate probes into metrics, paired statistics, gates and baseline comparison.

Reads replay's typed records; produces a ``RunSummary``. Imports nothing from reporting or the CLI.
"""

from harness.evaluation._gates import LOWER_IS_BETTER, Gate, GateResult, evaluate, load_gates, lower_is_better
from harness.evaluation._parts import probe_frame
from harness.evaluation._records import (
    SUMMARY_SCHEMA,
    BaselineComparison,
    ChangedProbe,
    Flip,
    RunSummary,
    ScenarioCounts,
    StrategySummary,
    SuiteDelta,
    Verdict,
)
from harness.evaluation._run import SUITE_METRICS, IncompleteComparison, compare_runs, evaluate_run
from harness.evaluation._stats import (
    Comparison,
    PairedComparison,
    bootstrap,
    bootstrap_ci,
    compare,
    mcnemar_exact,
    minimum_detectable_effect,
    p_text,
    sign_flip_p,
)
from harness.evaluation._summary import (
    COMPARED_METRICS,
    changed_probes,
    compared_metrics,
    paired,
    per_scenario_means,
    recall_mean,
    scenario_counts,
    strategy_metrics,
    summarize,
)

__all__ = [
    "COMPARED_METRICS",
    "LOWER_IS_BETTER",
    "SUITE_METRICS",
    "SUMMARY_SCHEMA",
    "BaselineComparison",
    "ChangedProbe",
    "Comparison",
    "Flip",
    "Gate",
    "GateResult",
    "IncompleteComparison",
    "PairedComparison",
    "RunSummary",
    "ScenarioCounts",
    "StrategySummary",
    "SuiteDelta",
    "Verdict",
    "bootstrap",
    "bootstrap_ci",
    "changed_probes",
    "compare",
    "compare_runs",
    "compared_metrics",
    "evaluate",
    "evaluate_run",
    "load_gates",
    "lower_is_better",
    "mcnemar_exact",
    "minimum_detectable_effect",
    "p_text",
    "paired",
    "per_scenario_means",
    "probe_frame",
    "recall_mean",
    "scenario_counts",
    "sign_flip_p",
    "strategy_metrics",
    "summarize",
]
