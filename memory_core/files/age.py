"""Memory age and freshness text (spec §9). Pure: ``now`` is a parameter."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Final

from memory_core.files.formats import to_ms

DAY_MS: Final = 86_400_000
_FRESHNESS_TAIL: Final = (
    "Memories are point-in-time observations, not live state — claims about code behavior or file:line "
    "citations may be outdated. Verify against current code before asserting as fact."
)


def memory_age_days(mtime_ms: float, *, now: datetime) -> int:
    """Whole days since ``mtime_ms``, floored, a future mtime clamped to 0."""
    return max(0, math.floor((to_ms(now) - mtime_ms) / DAY_MS))


def memory_age(mtime_ms: float, *, now: datetime) -> str:
    """``today``, ``yesterday`` or ``<d> days ago``."""
    days = memory_age_days(mtime_ms, now=now)
    if days == 0:
        return "today"
    if days == 1:
        return "yesterday"
    return f"{days} days ago"


def freshness_text(mtime_ms: float, *, now: datetime) -> str:
    """The staleness caveat for memories older than one day, else ``''``."""
    days = memory_age_days(mtime_ms, now=now)
    if days <= 1:
        return ""
    return f"This memory is {days} days old. {_FRESHNESS_TAIL}"


def freshness_note(mtime_ms: float, *, now: datetime) -> str:
    """The caveat wrapped in ``<system-reminder>`` tags plus a newline, or ``''``."""
    text = freshness_text(mtime_ms, now=now)
    return f"<system-reminder>{text}</system-reminder>\n" if text else ""
