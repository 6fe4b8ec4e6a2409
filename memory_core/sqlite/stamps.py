"""Stored timestamps (spec §8.2, Q15): naive UTC ISO-8601 with a fixed ``timespec``, so SQL compares them in order."""

from __future__ import annotations

from datetime import UTC, datetime


def iso(moment: datetime) -> str:
    """Naive UTC ISO-8601 with a fixed ``timespec`` so SQL string comparisons stay ordered (spec §8.2, Q15)."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment.isoformat(timespec="microseconds")


def parse_iso(text: str | None) -> datetime | None:
    """The naive UTC datetime a stored timestamp denotes (aware input is converted, never compared raw)."""
    if not text:
        return None
    moment = datetime.fromisoformat(text)
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo is not None else moment
