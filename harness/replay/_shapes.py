"""What a system returns must have the protocol's shape (docs/system-protocol.md): every field of a result or a
record is checked against its annotation when it crosses into the harness, so a system answering ``selected=5`` or
``strategy=5`` fails its scenario with a message naming the call and the field, instead of crashing the harness
later (a harness error) or passing unnoticed."""

from __future__ import annotations

import dataclasses
import itertools
import math
import types
import typing
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import fields
from datetime import datetime
from typing import Any, Final

from harness.errors import SYSTEM_FAILED, SystemFailure, one_line
from harness.system import DreamResult, ExtractResult, ForgetResult, MemoryRecord, RecallResult, RecordEntry

Check = Callable[[Any], bool]


def _check(hint: Any) -> Check:
    """A predicate for one annotation: classes, ``X | None``, ``tuple[X, ...]`` (a list is accepted too: the shipped
    adapters build either), ``Mapping[...]`` and ``Any``."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return lambda _v: True
    if origin in (types.UnionType, typing.Union):
        parts = [_check(a) for a in typing.get_args(hint)]
        return lambda v: any(p(v) for p in parts)
    if hint is type(None):
        return lambda v: v is None
    if origin is tuple:
        item = _check(typing.get_args(hint)[0])
        return lambda v: isinstance(v, (tuple, list)) and all(item(x) for x in v)
    if origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
        key_hint, value_hint = typing.get_args(hint) or (Any, Any)
        key = _check(key_hint)
        value = _scalar if value_hint is Any else _check(value_hint)  # details: name -> a value a scenario can state
        return lambda v: isinstance(v, Mapping) and all(key(k) and value(x) for k, x in v.items())
    if hint is float:
        return lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    if isinstance(hint, type):
        return lambda v: isinstance(v, hint)
    raise TypeError(f"no shape check for {hint!r}")  # a new protocol field of a new kind: teach _check


def _scalar(value: Any) -> bool:
    """A ``details`` value: text without NUL, a whole or finite number, true/false or null (what a scenario's
    ``expect_details`` compares it with; anything else has no meaning in probes.jsonl)."""
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, (bool, int)) or (isinstance(value, str) and "\x00" not in value)


def _checks(cls: type) -> tuple[tuple[str, Check, str], ...]:
    hints = typing.get_type_hints(cls, {"datetime": datetime, "RecordEntry": RecordEntry, "Mapping": Mapping, "Any": Any})
    return tuple((f.name, _check(hints[f.name]), _name(hints[f.name])) for f in fields(cls))


def _name(hint: Any) -> str:
    if isinstance(hint, type):
        return hint.__name__
    return str(hint).replace("typing.", "").replace("collections.abc.", "").replace("harness.system.", "") \
        .replace("datetime.datetime", "datetime")


_HOW: Final = {"float": " (finite)", "tuple[float, ...]": " (finite)",
               "Mapping[str, Any]": " (names to text, numbers, true/false or null)"}
"""What the annotation alone does not say about a value it refused."""

SHAPES: Final[dict[type, tuple[tuple[str, Check, str], ...]]] = {
    cls: _checks(cls) for cls in (RecallResult, ExtractResult, DreamResult, ForgetResult, MemoryRecord, RecordEntry)}


def shape_problem(value: Any) -> str | None:
    """The first field of a protocol dataclass whose value has the wrong type (one line), or None."""
    checks = next((c for k in type(value).__mro__ if (c := SHAPES.get(k)) is not None), ())  # subclasses too
    for name, ok, wanted in checks:
        got = getattr(value, name, None)
        if not ok(got):
            return f"{name}={_short(got)} ({type(got).__name__}), expected {wanted}{_HOW.get(wanted, '')}"
        if name == "warnings" and got and any(set(w) & {"\n", "\r", "\x00"} for w in got):  # one line each
            return f"warnings={_short(got)}, expected one line of text each"
        if name in WORDS and got is not None and (len(got) > MAX_WORD_CHARS or not got.isprintable()):
            return f"{name}={_short(got)} ({len(got):,} characters), expected one line of at most {MAX_WORD_CHARS}"
        if (most := TEXT_CHARS.get(name)) and got and (long := next((t for t in ((got,) if isinstance(got, str) else got)
                                                                    if len(t) > most), None)) is not None:
            return f"{name} holding {_short(long)} ({len(long):,} characters), expected at most {most:,} each"
        if name in IDS and got and (bad := next((t for t in ((got,) if isinstance(got, str) else got)
                                                 if any(unicodedata.category(c) in ("Cc", "Cs") for c in t)), None)) is not None:
            return f"{name} holding {_short(bad)}, expected an id without control characters or lone surrogates"
        if name == "entries" and got:
            for entry in got:
                if (problem := shape_problem(entry)) is not None:
                    return f"entries: {problem}"
    return None


def _short(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:
        text = "<unprintable>"
    return text if len(text) <= 60 else text[:57] + "..."


WORDS: Final = frozenset({"strategy", "fallback_reason", "status", "reason"})
"""A result's fields that name one thing of a vocabulary (a strategy, a fallback reason, a status): one printable
line of at most ``MAX_WORD_CHARS``. Round 16: a recall answering a strategy of 10,000,000 characters passed, and
each such probe wrote 10 MB into probes.jsonl and report.html (a suite of them, a run past what its readers read)."""
MAX_WORD_CHARS: Final = 200
TEXT_CHARS: Final = {"error": 2_000, "selected": 1_000, "removed": 1_000, "written": 1_000, "touched": 1_000,
                     "warnings": 2_000}
"""The longest ``error`` and warning, and the longest id a result names (round 16: an ``error`` or a selected id of
5,000,000 characters went whole into probes.jsonl, traces.jsonl, junit.xml, the report and the console's line)."""

IDS: Final = frozenset({"selected", "removed", "written", "touched", "id"})
"""The fields naming memories by id (a result's, a record's): no control character (round 20b: a plug-in's selected
id holding ESC or NUL reached report.html raw, as the scenario's failure message quoted it)."""

MAX_RESULT_ITEMS: Final = 10_000
"""The most items a result's list (``selected``, ``scores``, ``removed``, ``entries``, ``details``, a record's
entries) may hold: a recall selects at most a few, and 2,000,000 selections took a minute a scenario to judge."""


def _too_long(value: Any, path: str = "") -> str | None:
    """The first list or mapping in ``value`` (a protocol dataclass, nested) longer than ``MAX_RESULT_ITEMS``."""
    if isinstance(value, (tuple, list, Mapping)):
        return f"{path or 'the result'} holds more than {MAX_RESULT_ITEMS:,} items" \
            if len(value) > MAX_RESULT_ITEMS else None
    for name in (f.name for f in fields(value)) if type(value) in SHAPES or isinstance(value, tuple(SHAPES)) else ():
        got = getattr(value, name, None)
        problem = _too_long(got, name) if isinstance(got, (tuple, list, Mapping)) else None
        if problem is None and name == "entries" and isinstance(got, (tuple, list)):
            problem = next((p for e in got if (p := _too_long(e, "entries")) is not None), None)
        if problem is not None:
            return problem
    return None


def plain(value: Any, limit: int | None = MAX_RESULT_ITEMS + 1) -> Any:
    """A copy of a checked result built from the built-in types only (a ``str`` subclass becomes its text, a
    protocol dataclass's subclass the protocol class), so nothing the system defined runs in the harness later:
    a subclass whose ``__hash__``, ``__eq__``, ``__float__`` or ``__repr__`` raises crashed the harness (an
    INCOMPLETE run, exit 2) instead of failing the system's scenario. A list or mapping is read up to ``limit`` items
    (None: whole; a record's entries are the store's content, never cut)."""
    kind = type(value)
    if kind in (str, int, float, bool, type(None), datetime):
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):  # bool cannot be subclassed
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, datetime):  # a subclass: the same instant as a datetime (its tzinfo kept)
        return datetime(value.year, value.month, value.day, value.hour, value.minute, value.second, value.microsecond,
                        value.tzinfo, fold=value.fold)
    if isinstance(value, (tuple, list)):  # at most one item past the bound: whatever its __len__ says
        items = [plain(x, limit) for x in itertools.islice(value, limit)]
        return tuple(items) if isinstance(value, tuple) else items
    if isinstance(value, Mapping):
        return {plain(k, limit): plain(v, limit) for k, v in itertools.islice(value.items(), limit)}
    base = next((k for k in kind.__mro__ if k in SHAPES), None)
    if base is not None:
        return base(**{f.name: plain(getattr(value, f.name), limit) for f in fields(base)})
    return value


def checked_result(call: str, result: Any) -> Any:
    """A plain copy of ``result`` of operation ``call`` if its fields have the protocol's shape and no list in it
    is longer than ``MAX_RESULT_ITEMS``, else the system's failure."""
    copy = plain(result)  # checked as built-in values, bounded: no method of the system's runs in the harness later
    if (problem := _too_long(copy) or shape_problem(copy)) is not None:
        raise SystemFailure(f"{SYSTEM_FAILED}: {call}() returned a {type(result).__name__} with {problem} "
                            "(docs/system-protocol.md)")
    return _quotable(copy)


def _quotable(result: Any) -> Any:
    """``result`` with its ``error`` and warnings on one printable line each (``one_line``): they are quoted in the
    step's failure, summary.md and report.html (round 20b: a plug-in's ``error="a\\x1bb"`` reached both raw, a lone
    surrogate in it made the run INCOMPLETE)."""
    changes: dict[str, Any] = {}
    if isinstance(error := getattr(result, "error", None), str) and not error.isprintable():
        changes["error"] = one_line(error)
    if (warnings := getattr(result, "warnings", None)) and not all(w.isprintable() for w in warnings):
        changes["warnings"] = type(warnings)(one_line(w) for w in warnings)
    return dataclasses.replace(result, **changes) if changes else result


def checked_records(result: Any) -> list[MemoryRecord]:
    """``documents()``'s answer as a list of well-formed ``MemoryRecord`` objects, else the system's failure."""
    if isinstance(result, (str, bytes, Mapping)) or not hasattr(result, "__iter__"):
        raise SystemFailure(f"{SYSTEM_FAILED}: documents() returned {type(result).__name__}, expected a list of "
                            "MemoryRecord (docs/system-protocol.md)")
    records = list(result)
    if len(records) > MAX_RESULT_ITEMS * 10:
        raise SystemFailure(f"{SYSTEM_FAILED}: documents() returned {len(records):,} records (at most "
                            f"{MAX_RESULT_ITEMS * 10:,}; docs/system-protocol.md)")
    for i, record in enumerate(records):
        if type(record) is not MemoryRecord and not isinstance(record, MemoryRecord):
            raise SystemFailure(f"{SYSTEM_FAILED}: documents() item {i} is {type(record).__name__}, expected "
                                "MemoryRecord (docs/system-protocol.md)")
        records[i] = plain(record, None)  # checked as built-in values: no method of the system's runs later
        if (problem := shape_problem(records[i])) is not None:
            raise SystemFailure(f"{SYSTEM_FAILED}: documents() item {i} is a MemoryRecord with {problem} "
                                "(docs/system-protocol.md)")
    return records
