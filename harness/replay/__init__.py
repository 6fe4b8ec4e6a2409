"""Stage 2 — replay: run scenarios against a system under test under a fake clock and produce typed ``Probe``s.

The system-under-test protocol (``MemorySystem``, ``MemoryRecord``, result types, ``Capability``) is harness-owned
and needs no ``memory_core`` import to implement; ``ReferenceSystem`` adapts the reference core onto it.
"""

from harness.replay._cassette import Cassette, CassetteModel, Mode, read_meta, request_key
from harness.replay._coverage import covered_facts, doc_covers, entry_coverage, recall_metrics
from harness.replay._index import SPEC_LIMITS, IndexLimits, index_stats
from harness.replay._models import ProbeContext, scripted_model
from harness.replay._needs import step_needs
from harness.replay._protocol import (
    ALL_CAPABILITIES,
    DREAM_REASONS,
    EXTRACT_REASONS,
    Capability,
    DreamResult,
    ExtractResult,
    FileIndexSystem,
    ForgetResult,
    MemoryRecord,
    MemorySystem,
    RecallResult,
    RecordEntry,
    SystemChecks,
    SystemFactory,
    capabilities_of,
    system_name,
)
from harness.replay._records import Probe, ProbeKind, ScenarioResult, TokenUsage
from harness.replay._reference import ReferenceSystem, reference_factory
from harness.replay._replay import replay
from harness.replay._suite import (
    ModelSpec,
    RunConfig,
    SuiteRun,
    Worker,
    column_label,
    discard_side,
    load_factory,
    needs_cassette_model,
    plan_columns,
    prestart_side,
    relabel,
    run_plan,
    run_suite,
    select_shard,
    split_column,
    strategies_for,
    system_plan,
)

__all__ = [
    "ALL_CAPABILITIES",
    "DREAM_REASONS",
    "EXTRACT_REASONS",
    "SPEC_LIMITS",
    "Capability",
    "Cassette",
    "CassetteModel",
    "DreamResult",
    "ExtractResult",
    "FileIndexSystem",
    "ForgetResult",
    "IndexLimits",
    "MemoryRecord",
    "MemorySystem",
    "Mode",
    "ModelSpec",
    "Probe",
    "ProbeContext",
    "ProbeKind",
    "RecallResult",
    "RecordEntry",
    "ReferenceSystem",
    "RunConfig",
    "ScenarioResult",
    "SuiteRun",
    "SystemChecks",
    "SystemFactory",
    "TokenUsage",
    "Worker",
    "capabilities_of",
    "column_label",
    "covered_facts",
    "discard_side",
    "doc_covers",
    "entry_coverage",
    "index_stats",
    "load_factory",
    "needs_cassette_model",
    "plan_columns",
    "prestart_side",
    "read_meta",
    "recall_metrics",
    "reference_factory",
    "relabel",
    "replay",
    "request_key",
    "run_plan",
    "run_suite",
    "scripted_model",
    "select_shard",
    "split_column",
    "step_needs",
    "strategies_for",
    "system_name",
    "system_plan",
]
