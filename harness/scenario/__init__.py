"""Stage 1 — the scenario format: typed scenarios, the YAML loader/validator, the dumper and the strategy registry.

Nothing here imports a later stage (replay, evaluation, reporting, CLI).
"""

from harness.scenario._dump import dump_yaml, scenario_to_yaml
from harness.scenario._load import (
    DREAM_REASONS,
    DREAM_STATUSES,
    EXTRACT_REASONS,
    load_all,
    load_scenario,
)
from harness.scenario._load_more import EXTRACT_STATUSES
from harness.scenario._memories import TYPES
from harness.scenario._packed import model_faults, unpacked
from harness.scenario._registry import (
    MODEL_STRATEGIES,
    OUTCOME_STRATEGIES,
    RANKED_STRATEGIES,
    STRATEGIES,
    STRATEGY_NAMES,
    StrategySpec,
    base_strategy,
    ranker_plugin,
    strategy_spec,
)
from harness.scenario._strict import strict_problems
from harness.scenario._types import (
    AdvanceStep,
    CheckStep,
    DreamStep,
    EntryExpect,
    Fact,
    FaultStep,
    ForgetStep,
    LockStep,
    Outcome,
    RecallStep,
    Scenario,
    SeedMemory,
    SessionStep,
    StateStep,
    Step,
    ToolCallSpec,
    ToolResultSpec,
    TrailingExpect,
    Turn,
    raw_text,
)

__all__ = [
    "DREAM_REASONS",
    "DREAM_STATUSES",
    "EXTRACT_REASONS",
    "EXTRACT_STATUSES",
    "MODEL_STRATEGIES",
    "OUTCOME_STRATEGIES",
    "RANKED_STRATEGIES",
    "STRATEGIES",
    "STRATEGY_NAMES",
    "TYPES",
    "AdvanceStep",
    "CheckStep",
    "DreamStep",
    "EntryExpect",
    "Fact",
    "FaultStep",
    "ForgetStep",
    "LockStep",
    "Outcome",
    "RecallStep",
    "Scenario",
    "SeedMemory",
    "SessionStep",
    "StateStep",
    "Step",
    "StrategySpec",
    "ToolCallSpec",
    "ToolResultSpec",
    "TrailingExpect",
    "Turn",
    "base_strategy",
    "dump_yaml",
    "load_all",
    "load_scenario",
    "model_faults",
    "ranker_plugin",
    "raw_text",
    "scenario_to_yaml",
    "strategy_spec",
    "strict_problems",
    "unpacked",
]
