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
    discard_side,
    load_factory,
    needs_cassette_model,
    prestart_side,
    run_suite,
    select_shard,
    strategies_for,
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
    "covered_facts",
    "discard_side",
    "doc_covers",
    "entry_coverage",
    "index_stats",
    "load_factory",
    "needs_cassette_model",
    "prestart_side",
    "read_meta",
    "recall_metrics",
    "reference_factory",
    "replay",
    "request_key",
    "run_suite",
    "scripted_model",
    "select_shard",
    "step_needs",
    "strategies_for",
    "system_name",
]
