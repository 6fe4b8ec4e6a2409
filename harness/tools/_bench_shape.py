"""The shape of a ``memharness bench`` file (``benchmark.json``) as ``run --benchmark`` reads it for the report.

Before (hostile probe, round 12) only "a JSON object" was checked: of 150 generated variants of a real file (a
value replaced, a key dropped), 60 ended the whole run, after its replay, in ``internal error`` (jinja's
UndefinedError on ``bench.mode``, ``strategies.items()`` of a list, ``format`` of a text delta) and the rest were
accepted whatever they held (``"n": "x"`` shown in the report). Every field the report shows is now checked before
any replay, the first wrong one named as ``<field>: <problem>`` (the caller adds the file and line).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Final

from harness.errors import one_line


@dataclass(frozen=True)
class Each:
    """Every value of an object (``map``) or every item of an array (``list``) has ``spec``."""

    spec: object
    kind: str = "map"


NUMBER: Final = "number"
ROW: Final = {"n": int, "R@5": NUMBER, "R@10": NUMBER, "hit@5": NUMBER, "hit@10": NUMBER, "MRR": NUMBER}
COMPARISON: Final = {"a": str, "b": str, "metric": str, "n": int, "delta": NUMBER, "ci95": Each(NUMBER, "pair"),
                     "p_value": NUMBER, "wins": int, "ties": int, "losses": int}
BENCHMARK: Final = {
    "dataset": str, "mode": ("turns", "observations"), "questions": int, "scored": int,
    "strategies": Each({"table": Each(ROW), "seconds": NUMBER, "peak_rss_mb": NUMBER}),
    "calibration": Each(Each(NUMBER)), "comparisons": Each(COMPARISON, "list")}
"""What the report shows of a benchmark file (other members, e.g. ``per_question``, are not read)."""


def benchmark_problem(data: Any) -> str | None:
    """``field: problem`` for the first field of a parsed benchmark file the report cannot show; None when all are
    of their type (numbers: never true, never NaN; counts: whole numbers from 0)."""
    return _problem(data, BENCHMARK, "")


def _problem(value: Any, spec: object, where: str) -> str | None:
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            return _wrong(value, "an object", where)
        for key, inner in spec.items():
            if key not in value:
                return f"{where}{'.' if where else ''}{key}: missing"
            if (p := _problem(value[key], inner, f"{where}{'.' if where else ''}{key}")) is not None:
                return p
        return None
    if isinstance(spec, Each):
        if spec.kind == "map":
            if not isinstance(value, dict):
                return _wrong(value, "an object", where)
            return next((p for k, v in value.items() if (p := _problem(v, spec.spec, f"{where}.{k}"))), None)
        if not isinstance(value, list) or (spec.kind == "pair" and len(value) != 2):
            return _wrong(value, "a pair of numbers" if spec.kind == "pair" else "an array", where)
        return next((p for i, v in enumerate(value) if (p := _problem(v, spec.spec, f"{where}[{i}]"))), None)
    if isinstance(spec, tuple):
        return None if value in spec and isinstance(value, str) else _wrong(value, " or ".join(spec), where)
    if spec is int:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        return None if ok else _wrong(value, "a whole number from 0", where)
    if spec == NUMBER:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)
        return None if ok else _wrong(value, "a number", where)
    return None if isinstance(value, str) else _wrong(value, "text", where)


def _wrong(value: Any, wanted: str, where: str) -> str:
    try:
        shown = json.dumps(value, ensure_ascii=False)
    except (ValueError, RecursionError):
        shown = type(value).__name__
    return f"{where or 'file'}: expected {wanted}, got {one_line(shown)[:60]}"
