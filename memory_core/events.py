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
class LifecycleEvent:
    """Fields extract and dream events share (spec §10)."""

    session_id: str
    status: str
    """extract: ``completed`` | ``skipped`` | ``failed``; dream: ``updated`` | ``noop`` | ``skipped`` | ``failed``."""
    duration_ms: float
    strategy: str = "heuristic"
    """``heuristic`` or ``model``: what actually ran."""
    trigger: str = "auto"
    skipped_reason: str | None = None
    touched_topics: tuple[str, ...] = ()
    fallback_reason: str | None = None
    """Why the model path fell back to the heuristic, when it did."""
    error: str | None = None
    warnings: tuple[str, ...] = field(default=(), kw_only=True)
    """Files ignored or repaired during the operation (corrupt state file, unsafe or unreadable topic file,
    stale index), one line each naming the file."""


@dataclass(frozen=True, slots=True)
class ExtractEvent(LifecycleEvent):
    """One extraction exit (``skipped_reason``: ``queued`` | ``memory_tool`` | ``already_running``)."""

    patches_count: int = 0
    name: str = field(default=EXTRACT_EVENT, init=False)


@dataclass(frozen=True, slots=True)
class DreamEvent(LifecycleEvent):
    """One dream exit (fix: spec §12 — ``failed`` is emitted too)."""

    deduped_entries: int = 0
    name: str = field(default=DREAM_EVENT, init=False)


@dataclass(frozen=True, slots=True)
class QueryEvent:
    """Fields recall and forget events share: a query, the strategy that answered it, how long it took."""

    session_id: str
    query_length: int
    """Raw query length, untrimmed (spec §10)."""
    strategy: str
    """``none`` | ``heuristic`` | ``model`` (or a ranked strategy: ``bm25``, ``embedding``, ``hybrid``)."""
    duration_ms: float
    fallback_reason: str | None = None
    warnings: tuple[str, ...] = field(default=(), kw_only=True)
    """Files skipped or repaired during the operation, one line each naming the file."""


@dataclass(frozen=True, slots=True)
class RecallEvent(QueryEvent):
    """One recall exit (spec §10 recall fields)."""

    docs_scanned: int = 0
    docs_selected: int = 0
    selected: tuple[str, ...] = ()
    """Relative paths, in rank order (never written to telemetry unless content capture is on)."""
    dropped_files: int = 0
    top_score: float | None = None
    """The best ranker score, for ranked strategies."""
    name: str = field(default=RECALL_EVENT, init=False)


@dataclass(frozen=True, slots=True)
class ForgetEvent(QueryEvent):
    """One forget exit: how many candidates, what was removed."""

    candidates: int = 0
    removed_entries: int = 0
    touched_topics: tuple[str, ...] = ()
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
