"""Reading a stored row (spec §2): what a value SQLite lets through but no write of the port makes reads as.

- A NULL in a nullable column of a memory row reads as the column's default; a NULL ``content`` (a table another
  program made without ``NOT NULL``) reads as ``""`` and a number there (an untyped column) as its text.
- A blob in ``content``, text (or a blob) in a number column, or a timestamp that does not parse, is a damaged file:
  ``sqlite3.DatabaseError`` (``SqliteMemoryError`` naming the file).
- A number out of its column's range (hostile probe, round 10: ``access_count = -5`` raised ``ValueError: math domain
  error`` from recall) is brought into it: ``inf``/``-inf`` reads as the column's default (as a NULL; SQLite stores a
  NaN as NULL), ``importance_score``, ``confidence`` and ``decay_rate`` are clamped to [0, 1], ``access_count`` to a
  whole number in [0, 2**62] (so the access bump's ``+ 1`` still fits SQLite's 64-bit integer). The stored value is
  left as written until the port itself rewrites the row.
- A memory row whose ``id`` is NULL (or a blob) gets a fresh id when the database is opened (``opening.repair_ids``);
  one written by another program while the database is open is a damaged row (the documented error).
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Mapping
from typing import Any, Final

from memory_core.sqlite.stamps import parse_iso

DEFAULTS: Final[Mapping[str, Any]] = {
    "type": "fact", "priority": "short_term", "source": "", "importance_score": 0.5, "access_count": 0, "tags": [],
    "expires_at": None, "metadata": {}, "subject": "", "predicate": "", "confidence": 0.5, "decay_rate": 0.1,
    "last_accessed_at": None, "superseded_by": None, "source_episode_id": None,
}
ACCESS_MAX: Final = 2**62
RANGES: Final[Mapping[str, tuple[float, float]]] = {
    "importance_score": (0.0, 1.0), "confidence": (0.0, 1.0), "decay_rate": (0.0, 1.0), "access_count": (0, ACCESS_MAX),
}
"""Each number column's range (memories and episodes); a stored value outside it is clamped on read."""
_STAMPS: Final = ("created_at", "updated_at", "expires_at", "last_accessed_at")


def clamp_numbers(data: dict[str, Any], what: str, default: Mapping[str, Any]) -> None:
    """Bring ``data``'s number columns into their ranges, in place (a NULL or ``inf`` → ``default``); text or a blob
    in one raises ``sqlite3.DatabaseError`` naming the row (``what``)."""
    for key, (low, high) in RANGES.items():
        if key not in data:
            continue
        value = data[key]
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            data[key] = default[key]
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise sqlite3.DatabaseError(f"damaged {what} {str(data.get('id'))[:40]!r}: {key} = {value!r:.40}")
        value = int(value) if key == "access_count" else value
        data[key] = min(high, max(low, value))


def memory_row(row: sqlite3.Row) -> dict[str, Any]:
    """A memory row as a dict (tags and metadata decoded), read by the rules above."""
    data = dict(row)
    if "id" in data and not isinstance(data["id"], str | int | float):  # TEXT affinity: only NULL or a blob
        raise sqlite3.DatabaseError(f"damaged memory row: id = {data['id']!r:.40} (written by another program since "
                                    "this database was opened; reopening gives it a fresh id)")
    data.update({k: DEFAULTS[k] for k in DEFAULTS.keys() - {"tags", "metadata"} if k in data and data[k] is None})
    if not isinstance(data.get("content", ""), str):  # fix (hostile probe, round 11): NULL was the text "None"
        if isinstance(data["content"], bytes):
            raise sqlite3.DatabaseError(f"damaged memory row {str(data.get('id'))[:40]!r}: content = {data['content']!r:.40}")
        data["content"] = "" if data["content"] is None else str(data["content"])
    for key in _STAMPS:  # fix: a damaged row is the documented error, not a ValueError deep inside
        value = data.get(key)
        try:
            if value not in (None, ""):
                parse_iso(value)
        except (TypeError, ValueError) as exc:
            raise sqlite3.DatabaseError(f"damaged memory row {str(data.get('id'))[:40]!r}: {key} = {value!r:.40}") from exc
    clamp_numbers(data, "memory row", DEFAULTS)
    for key, kind in (("tags", list), ("metadata", dict)):  # fix: JSON of another shape (tags '5') reads as none
        if key in data:
            try:
                value = json.loads(data[key]) if isinstance(data[key], str) else None
            except (json.JSONDecodeError, RecursionError):
                value = None
            data[key] = value if isinstance(value, kind) else kind()
    return data
