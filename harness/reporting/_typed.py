"""A run read back from disk has the types its records declare (issue 33): every field of a ``RunSummary``, a
``ScenarioResult`` and a ``Probe`` rebuilt from ``summary.json``, ``results.jsonl`` and ``probes.jsonl`` is checked
against its annotation, recursively, before ``report``, ``compare``, ``merge`` or a baseline uses it. Found by the
sixth blind probe: 44 of 80 type-confused run files were accepted (``merge`` wrote ``query: true`` into a new run
directory) and others ended in an internal error with no file or field (``comparisons[0].delta = []``).

Stricter than Python's types, as JSON is: ``true`` is no number, a float is never NaN (the writers never write it),
``Literal`` values are one of theirs."""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any, Final

from harness.errors import one_line

INT64: Final = 1 << 63
"""Integers in a run file fit in 64 bits (numpy's int64 columns, SQLite's INTEGER)."""


def type_problem(value: Any) -> str | None:
    """``field: expected T, got V`` for the first field of the dataclass ``value`` (nested fields as
    ``comparisons[0].delta``, ``metrics.recall``) whose value does not have its declared type; None when all do."""
    return _dataclass_problem(value, "")


def row_problem(row: Mapping[str, Any], cls: type) -> str | None:
    """The same for a JSON row of ``cls`` as read, before ``from_row`` converts anything (a string where a list
    belongs must not become its letters): each field the row has, nested records given as objects."""
    problem = _fields_problem(row, cls, "")
    for name, _ in _hints(cls) if problem is None else ():
        limit = math.inf if name in UNBOUNDED else FLOAT_MAX
        if name in row and (problem := _size_problem(row[name], name, limit)) is not None:
            break
    return problem


FLOAT_MAX: Final = float(1 << 53)
"""Numbers written to a run file are below 2**53 in size (milliseconds, tokens, metrics): a larger one, or an
``Infinity`` literal, made a mean infinite and the report's JSON an internal error (round 12)."""
UNBOUNDED: Final = frozenset({"scores"})
"""Fields a system under test fills and nothing sums (a recall's scores: shown only): finite, of any size."""


def _size_problem(value: Any, where: str, limit: float) -> str | None:
    """The first float in ``value`` (as read from JSON) that is infinite or at least ``limit`` in size."""
    if isinstance(value, float) and not math.isnan(value) and not (math.isfinite(value) and abs(value) < limit):
        size = " below 2**53 in size" if limit == FLOAT_MAX else ""
        return f"{where}: expected a finite number{size}, got {one_line(repr(value))[:60]}"
    if isinstance(value, Mapping):
        return next((p for k, v in value.items() if (p := _size_problem(v, f"{where}.{k}", limit))), None)
    if isinstance(value, (list, tuple)):
        return next((p for i, v in enumerate(value) if (p := _size_problem(v, f"{where}[{i}]", limit))), None)
    return None


def _dataclass_problem(value: Any, prefix: str) -> str | None:
    cls: type = type(value)
    for name, hint in _hints(cls):
        problem = _problem(getattr(value, name, None), hint, f"{prefix}{name}")
        if problem is not None:
            return problem
    return None


def _fields_problem(row: Mapping[str, Any], cls: type, prefix: str) -> str | None:
    for name, hint in _hints(cls):
        if name in row and (problem := _problem(row[name], hint, f"{prefix}{name}")) is not None:
            return problem
    return None


@cache
def _hints(cls: type) -> tuple[tuple[str, Any], ...]:
    import sys

    module = vars(sys.modules[cls.__module__])
    hints = typing.get_type_hints(cls, module)
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls))


def _problem(value: Any, hint: Any, where: str) -> str | None:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any or isinstance(hint, typing.TypeVar):
        return None
    if origin in (types.UnionType, typing.Union):
        problems = [_problem(value, a, where) for a in args]
        return None if any(p is None for p in problems) else _wrong(value, hint, where)
    if origin is typing.Literal:
        return None if any(value == a and type(value) is type(a) for a in args) else _wrong(value, hint, where)
    if hint is type(None):
        return None if value is None else _wrong(value, hint, where)
    if origin in (tuple, list):
        if not isinstance(value, (tuple, list)):
            return _wrong(value, hint, where)
        items = args[:1] if origin is list or (len(args) == 2 and args[1] is Ellipsis) else args
        if origin is tuple and items is args and len(value) != len(args):
            return _wrong(value, hint, where)
        for i, item in enumerate(value):
            if (p := _problem(item, items[0] if len(items) == 1 else items[i], f"{where}[{i}]")) is not None:
                return p
        return None
    if origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
        if not isinstance(value, Mapping):
            return _wrong(value, hint, where)
        key, item = args if len(args) == 2 else (Any, Any)
        for k, v in value.items():
            if (p := _problem(k, key, f"{where} key")) is not None or (p := _problem(v, item, f"{where}.{k}")):
                return p
        return None
    if hint is bool:
        return None if isinstance(value, bool) else _wrong(value, hint, where)
    if hint is int:  # within 64 bits: the probe frame's columns are int64 (round 12: a step of 10**30 in
        if isinstance(value, int) and not isinstance(value, bool):  # probes.jsonl was an internal error in compare)
            return None if -INT64 <= value < INT64 else f"{where}: expected a whole number below 2**63 in size, got " \
                                                        f"{one_line(str(value))[:60]}"
        return _wrong(value, hint, where)
    if hint is float:  # never NaN; an infinity only in memory (a p-value or MDE written as null reads as inf)
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)
        return None if ok else _wrong(value, hint, where)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if isinstance(value, hint):
            return _dataclass_problem(value, f"{where}.")
        return _fields_problem(value, hint, f"{where}.") if isinstance(value, Mapping) else _wrong(value, hint, where)
    if isinstance(hint, type):
        return None if isinstance(value, hint) else _wrong(value, hint, where)
    return None  # a kind of annotation this check does not know: not checked


def _wrong(value: Any, hint: Any, where: str) -> str:
    try:
        shown = json.dumps(value, ensure_ascii=False, default=lambda v: type(v).__name__)
    except (ValueError, RecursionError):
        shown = type(value).__name__
    wanted = hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "").replace(
        "collections.abc.", "").replace("harness.replay._records.", "").replace("harness.evaluation._records.", "")
    return f"{where}: expected {wanted}, got {one_line(shown)[:60]}"


def rows_problem(strategies: Mapping[str, Any], results: Any) -> str | None:
    """``strategies.<column>.scenarios.<count>: …`` or ``strategies.<column>.metrics.recall.probes: …`` when the rows
    read from ``results.jsonl`` and ``probes.jsonl`` do not add up to what ``summary.json`` counted of them (the
    writer counts the rows it writes): a row lost or added since (round 14: a results row deleted with its probes,
    or probes deleted, was read silently and ``merge`` wrote a run with fewer probes and passing gates)."""
    for column, block in strategies.items():
        mine = [r for r in results if r.strategy == column]
        status = [r.status for r in mine]
        counted = {"total": len(mine), "passed": status.count("passed"), "failed": status.count("failed"),
                   "errors": status.count("error"), "skipped": status.count("skipped")}
        for key, rows in counted.items():
            if (written := getattr(block.scenarios, key)) != rows:
                return (f"strategies.{column}.scenarios.{key}: {written}, but results.jsonl has {rows} such row(s) of "
                        f"{column} (a row lost or added since the run?)")
        written = block.metrics.get("recall.probes")
        rows = sum(p.kind == "recall" and p.graded for r in mine for p in r.probes)  # a skipped probe feeds no metric
        if written is not None and written != rows:
            return (f"strategies.{column}.metrics.recall.probes: {written:g}, but probes.jsonl has {rows} graded recall "
                    f"probe(s) of {column} (a row lost or added since the run?)")
    return None
