"""Plain event records the core emits at each operation exit (spec §10), and the sinks that receive them.

The core knows nothing of OpenTelemetry: ``harness.telemetry`` turns these records into spans, metrics and logs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Protocol

EXTRACT_EVENT: Final = "qwen-code.memory.extract"
DREAM_EVENT: Final = "qwen-code.memory.dream"
RECALL_EVENT: Final = "qwen-code.memory.recall"
FORGET_EVENT: Final = "memharness.memory.forget"  # upstream removed its forget event (spec §10); ours is new


@dataclass(frozen=True, slots=True)
class ExtractEvent:
    """One extraction exit (spec §10 extract fields, plus the strategy that ran)."""

    session_id: str
    status: str
    """``completed`` | ``skipped`` | ``failed``."""
    duration_ms: float
    strategy: str = "heuristic"
    """``heuristic`` or ``model``; what actually ran."""
    trigger: str = "auto"
    skipped_reason: str | None = None
    """``queued`` | ``memory_tool`` | ``already_running`` when skipped."""
    patches_count: int = 0
    touched_topics: tuple[str, ...] = ()
    fallback_reason: str | None = None
    """Why the model path fell back to the heuristic, when it did."""
    error: str | None = None
    name: str = field(default=EXTRACT_EVENT, init=False)


@dataclass(frozen=True, slots=True)
class DreamEvent:
    """One dream exit (spec §10 dream fields; fix: spec §12 — ``failed`` is emitted too)."""

    session_id: str
    status: str
    """``updated`` | ``noop`` | ``skipped`` | ``failed``."""
    duration_ms: float
    strategy: str = "heuristic"
    trigger: str = "auto"
    skipped_reason: str | None = None
    deduped_entries: int = 0
    touched_topics: tuple[str, ...] = ()
    fallback_reason: str | None = None
    error: str | None = None
    name: str = field(default=DREAM_EVENT, init=False)


@dataclass(frozen=True, slots=True)
class RecallEvent:
    """One recall exit (spec §10 recall fields)."""

    session_id: str
    query_length: int
    docs_scanned: int
    docs_selected: int
    strategy: str
    """``none`` | ``heuristic`` | ``model`` (or another registered strategy)."""
    duration_ms: float
    selected: tuple[str, ...] = ()
    """Relative paths, in rank order (never written to telemetry unless content capture is on)."""
    fallback_reason: str | None = None
    dropped_files: int = 0
    top_score: float | None = None
    """The best ranker score, for ranked strategies."""
    name: str = field(default=RECALL_EVENT, init=False)


@dataclass(frozen=True, slots=True)
class ForgetEvent:
    """One forget exit: how many candidates, what was removed."""

    session_id: str
    query_length: int
    candidates: int
    removed_entries: int
    strategy: str
    duration_ms: float
    touched_topics: tuple[str, ...] = ()
    fallback_reason: str | None = None
    name: str = field(default=FORGET_EVENT, init=False)


Event = ExtractEvent | DreamEvent | RecallEvent | ForgetEvent


class EventSink(Protocol):
    """Receives every event the core emits."""

    def emit(self, event: Event) -> None:
        """Handle one event; must not raise."""
        ...


@dataclass(frozen=True, slots=True)
class NullSink:
    """Drops every event (the default)."""

    def emit(self, event: Event) -> None:
        """Ignore the event."""


@dataclass(slots=True)
class ListSink:
    """Keeps every event in order (tests, replay)."""

    events: list[Event] = field(default_factory=list)

    def emit(self, event: Event) -> None:
        """Append the event."""
        self.events.append(event)
