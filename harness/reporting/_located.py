"""The line of a field in a JSON file read back (``summary.json``): a type error names it as
``<file>:<line>: <field>: <problem>`` like every other run-file error (the tenth blind probe: ``strategies.
model:smollm2.scenarios.failed: expected int`` named the file, not the line 10 its value is on).

The field comes as the checks write it (``comparisons[0].delta``, ``strategies.model:x.metrics.latency.recall_ms.p50``:
keys may hold dots), so it is matched against the parsed data's own keys, longest first; the line is then found by
walking the text itself to that member (the last one of a key written twice, as JSON keeps). Only on an error path."""

from __future__ import annotations

import json
import re
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\n\r]*")
_INDEX = re.compile(r"\[(\d+)\]")


def field_line(text: str, data: Any, field: str) -> int:
    """The line (1-based) of the value ``field`` names in the JSON ``text`` (parsed: ``data``); of the deepest part
    of it found when not all is (a missing key: the object that lacks it)."""
    return _line_of(text, _path(data, field))


def problem_line(text: str, data: Any, problem: str) -> int:
    """The line of the field a ``field: problem`` message names."""
    return field_line(text, data, problem.split(": ", 1)[0])


def _path(data: Any, field: str) -> list[str | int]:
    path: list[str | int] = []
    rest = field
    while rest:
        if isinstance(data, list) and (m := _INDEX.match(rest)) and int(m.group(1)) < len(data):
            index = int(m.group(1))
            path.append(index)
            data, rest = data[index], rest[m.end():].removeprefix(".")
            continue
        if not isinstance(data, dict):
            break
        keys = sorted((k for k in data if isinstance(k, str) and (rest == k or rest.startswith((k + ".", k + "[")))),
                      key=len, reverse=True)
        if not keys:
            break
        path.append(keys[0])
        data, rest = data[keys[0]], rest[len(keys[0]):].removeprefix(".")
    return path


def _ws(text: str, at: int) -> int:
    match = _WS.match(text, at)
    return match.end() if match else at


def _line_of(text: str, path: list[str | int]) -> int:
    at = _ws(text, 0)
    try:
        for part in path:
            found = _member(text, at, part)
            if found is None:
                break
            at = found
    except (ValueError, IndexError, RecursionError):  # text that is no JSON there: the line reached so far
        pass
    return text.count("\n", 0, at) + 1


def _member(text: str, at: int, part: str | int) -> int | None:
    """Where the value of ``part`` (a key of the object, or an index of the list, at ``at``) starts."""
    found, i, n = None, _ws(text, at + 1), 0
    if text.startswith("{", at) and isinstance(part, str):
        while text.startswith('"', i):
            key, i = scanstring(text, i + 1)
            i = _ws(text, _ws(text, i) + 1)  # past the colon
            if key == part:
                found = i  # JSON keeps the last of a key written twice
            i = _ws(text, _DECODER.raw_decode(text, i)[1])
            if not text.startswith(",", i):
                break
            i = _ws(text, i + 1)
        return found
    if text.startswith("[", at) and isinstance(part, int):
        while i < len(text) and not text.startswith("]", i):
            if n == part:
                return i
            i = _ws(text, _DECODER.raw_decode(text, i)[1])
            if text.startswith(",", i):
                i = _ws(text, i + 1)
            n += 1
    return None
