"""The SQLite system's seed pass-through fields (``memories[i].system``) checked against its spec before a row is
planted: a value the spec has no place for is the scenario's error, never a row stored as written in silence.

Bounds are the spec's (s1-sqlite-memory-spec.md), stated here, never read from the port: ``importance`` a score in
[0, 1] (§2.1); ``priority`` one of §2.1's four values, lowercase as v2 writes them or uppercase as the column
default and §7 Q24's planted rows have them; ``duration`` one of §3.3's four; ``access_count`` a whole number.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from harness.errors import ScenarioInputError

PRIORITIES: Final = ("transient", "short_term", "long_term", "permanent")
"""Spec §2.1 ``priority``: v2 writes these lowercase; ``SHORT_TERM`` (the column default) plants a Q24 row."""
DURATIONS: Final = ("permanent", "7d", "24h", "session")
"""Spec §3.3 ``duration``."""
MAX_ACCESS_COUNT: Final = 2**62


def check_seed_fields(path: str, extra: Mapping[str, Any]) -> None:
    """Refuse a seed field out of its spec bounds, naming the memory, the field, the value and what is expected."""
    score = extra.get("importance", 0.5)  # round 13: true, -1 and 1e30 were taken
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1:
        raise ScenarioInputError(f"memory {path}: importance must be a number from 0 to 1, got {score!r}")
    accessed = extra.get("access_count")
    if accessed is not None and (type(accessed) is not int or not 0 <= accessed < MAX_ACCESS_COUNT):
        raise ScenarioInputError(f"memory {path}: access_count must be a whole number from 0 to 2**62 - 1, "
                                 f"got {accessed!r}")
    # round 16a: 'bogus', 5 or '' was stored as the row's priority, and an unknown duration gave no expiry, in silence
    priority = extra.get("priority")
    if priority is not None and not (isinstance(priority, str) and priority in (*PRIORITIES, *(p.upper() for p in PRIORITIES))):
        raise ScenarioInputError(f"memory {path}: priority must be one of {', '.join(PRIORITIES)} (or the same in "
                                 f"uppercase, spec §7 Q24), got {priority!r}")
    row_id = extra.get("id")  # round 20b: a tab or line break in it made the system's own results fail the protocol,
    # a line separator reached report.html, and an empty one was dropped in silence (a fresh id instead)
    if row_id is not None and (not str(row_id).isprintable() or not str(row_id).strip()):
        raise ScenarioInputError(f"memory {path}: id must be one line without control characters (printable, not "
                                 f"blank), got {row_id!r:.80}")
    duration = extra.get("duration")
    if duration is not None and duration not in DURATIONS:
        raise ScenarioInputError(f"memory {path}: duration must be one of {', '.join(DURATIONS)}, got {duration!r}")
