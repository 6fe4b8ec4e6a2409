"""Stage 3 — evaluation: aggregate probes into metrics, paired statistics, gates and baseline comparison.

Reads replay's typed records; produces a ``RunSummary``. Imports nothing from reporting or the CLI.
"""

from harness.evaluation._gates import Gate, GateResult, evaluate, load_gates
from harness.evaluation._records import (
    SUMMARY_SCHEMA,
    BaselineComparison,
    ChangedProbe,
    RunSummary,
    ScenarioCounts,
    StrategySummary,
)
from harness.evaluation._run import compare_runs, evaluate_run
from harness.evaluation._stats import (
    Comparison,
    PairedComparison,
    bootstrap_ci,
    compare,
    mcnemar_exact,
    minimum_detectable_effect,
    sign_flip_p,
)
from harness.evaluation._summary import (
    COMPARED_METRICS,
    changed_probes,
    paired,
    per_scenario_means,
    probe_frame,
    scenario_counts,
    strategy_metrics,
    summarize,
)

__all__ = [
    "COMPARED_METRICS",
    "SUMMARY_SCHEMA",
    "BaselineComparison",
    "ChangedProbe",
    "Comparison",
    "Gate",
    "GateResult",
    "PairedComparison",
    "RunSummary",
    "ScenarioCounts",
    "StrategySummary",
    "bootstrap_ci",
    "changed_probes",
    "compare",
    "compare_runs",
    "evaluate",
    "evaluate_run",
    "load_gates",
    "mcnemar_exact",
    "minimum_detectable_effect",
    "paired",
    "per_scenario_means",
    "probe_frame",
    "scenario_counts",
    "sign_flip_p",
    "strategy_metrics",
    "summarize",
]
