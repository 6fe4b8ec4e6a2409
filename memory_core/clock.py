"""Time sources. Only this module reads the wall clock; everything else takes ``now`` or a ``Clock``."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """A source of aware UTC datetimes."""

    def now(self) -> datetime:
        """The current time (timezone-aware, UTC)."""
        ...


@dataclass(frozen=True, slots=True)
class SystemClock:
    """The real wall clock."""

    def now(self) -> datetime:
        """The current wall-clock time in UTC."""
        return datetime.now(UTC)


@dataclass(slots=True)
class FixedClock:
    """A settable fake clock for tests and scenario replay; time moves only when told."""

    current: datetime = field(default_factory=lambda: datetime(2026, 1, 1, tzinfo=UTC))

    def __post_init__(self) -> None:
        if self.current.tzinfo is None:
            raise ValueError("FixedClock needs a timezone-aware datetime")

    def now(self) -> datetime:
        """The current fake time."""
        return self.current

    def advance(self, delta: timedelta) -> None:
        """Move the clock forward (a negative delta is refused: time never runs backwards)."""
        if delta < timedelta(0):
            raise ValueError(f"cannot move the clock backwards by {delta}")
        self.current = self.current + delta

    def set(self, moment: datetime) -> None:
        """Jump to an absolute time."""
        self.current = moment


def monotonic_ms() -> float:
    """Real elapsed-time source in milliseconds (durations are wall clock, spec Appendix D)."""
    return time.perf_counter() * 1000
