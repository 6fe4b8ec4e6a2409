"""What each benchmark hands ``bench_targets.py``: its issue-34 targets, measured, as one JSON file.

A script given ``--json PATH`` writes ``{"script": ..., "targets": [...]}`` there (atomically), each target a
dict: ``name``, ``value`` (the measured ratio or slope), ``limit``, ``better`` (``"lower"`` or ``"higher"``),
``detail`` (the numbers behind it) and ``load`` (the 1-minute load average when it was measured).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any


def target(name: str, value: float, limit: float, better: str, detail: str) -> dict[str, Any]:
    """One measured target, with the load average it ran under."""
    if better not in ("lower", "higher"):
        raise ValueError(f"better must be 'lower' or 'higher', not {better!r}")
    return {"name": name, "value": value, "limit": limit, "better": better, "detail": detail,
            "load": round(os.getloadavg()[0], 2)}


def met(row: dict[str, Any]) -> bool | None:
    """Whether a target is met; None when its value is not a number (nothing measured)."""
    value = row["value"]
    if not isinstance(value, int | float) or math.isnan(value):
        return None
    return bool(value <= row["limit"] if row["better"] == "lower" else value >= row["limit"])


def write_json(path: str | None, script: str, targets: list[dict[str, Any]]) -> None:
    """Write the targets to ``path`` with the run's own atomic writer; nothing when ``path`` is None."""
    if path is not None:
        from harness.reporting import atomic_write

        atomic_write(Path(path), json.dumps({"script": script, "targets": targets}, indent=1) + "\n")
