"""The system-under-test protocol (documented import path; it lives in ``harness.replay``).

    from harness.system import MemorySystem, MemoryRecord, Capability, ReferenceSystem
"""

from harness.replay import (
    ALL_CAPABILITIES,
    Capability,
    DreamResult,
    ExtractResult,
    FileIndexSystem,
    ForgetResult,
    MemoryRecord,
    MemorySystem,
    RecallResult,
    RecordEntry,
    ReferenceSystem,
    SystemFactory,
    reference_factory,
)

__all__ = [
    "ALL_CAPABILITIES",
    "Capability",
    "DreamResult",
    "ExtractResult",
    "FileIndexSystem",
    "ForgetResult",
    "MemoryRecord",
    "MemorySystem",
    "RecallResult",
    "RecordEntry",
    "ReferenceSystem",
    "SystemFactory",
    "reference_factory",
]
