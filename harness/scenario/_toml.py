"""Lines in a TOML file, for errors that name them (``<file>:<line>: <field>: <problem>``): tomllib gives parsed
values, not where they were written. Used by the gates file and ``sensitivity``'s catalogue and triage files."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harness.errors import HarnessError, long_number_line


def file_lines(text: str) -> list[str]:
    """The lines of a TOML or JSON file as its parser and an editor count them: split at LF only (a CR before it is
    left to the patterns' whitespace). Not ``str.splitlines()``: it also breaks at U+2028, U+2029 and U+0085, which
    TOML and JSON allow in comments and strings, and every line named after one was off (round 16)."""
    return text.split("\n")


def toml_error_line(exc: Exception) -> int:
    """The line tomllib's error names (``… (at line 3, column 5)``), else 1."""
    where = re.search(r"at line (\d+)", str(exc))
    return int(where.group(1)) if where else 1


def key_line(text: str, key: str) -> int:
    """The first line that sets ``key`` (``key = …``, ``[key]``, ``[[key]]``, ``[key.sub]``), else 1."""
    name = rf"\s*(?:{re.escape(key)}|\"{re.escape(key)}\"|'{re.escape(key)}')\s*"
    return next((n for n, line in enumerate(file_lines(text), 1)
                 if re.match(rf"{name}[=.]|\s*\[\[?{name}[].]", line)), 1)


def table_array(path: Path, text: str, data: dict[str, Any], key: str,
                error: type[HarnessError] = HarnessError) -> list[tuple[int, dict[str, Any]]]:
    """The ``[[key]]`` tables of a TOML file with the line of each header (missing: none). ``key = 5`` or an array
    holding anything but tables is ``<file>:<line>: <key>: …`` (round 12: an internal error, ``AttributeError`` on
    ``[1, 2]`` and ``TypeError`` on ``5``)."""
    lines = file_lines(text)
    headers = [n for n, line in enumerate(lines, 1) if re.fullmatch(rf"\s*\[\[\s*[\"']?{key}[\"']?\s*\]\]\s*(#.*)?", line)]
    assigned = key_line(text, key)
    value = data.get(key, [])
    if not isinstance(value, list):
        raise error(f"{path}:{assigned}: {key}: expected [[{key}]] tables, got {type(value).__name__}")
    out = []
    for i, item in enumerate(value):
        line = headers[i] if len(headers) == len(value) else assigned
        if not isinstance(item, dict):
            raise error(f"{path}:{line}: {key} {i + 1}: expected a table ([[{key}]]), got {type(item).__name__}")
        out.append((line, item))
    return out


def member_line(text: str, header: int, key: str) -> int:
    """The line of ``key = …`` in the table whose header is on line ``header`` (the header's own line when the
    key is not written there, e.g. a missing one, or the table is written inline)."""
    name = rf"\s*(?:{re.escape(key)}|\"{re.escape(key)}\"|'{re.escape(key)}')\s*="
    for n, line in enumerate(file_lines(text)[header:], header + 1):
        if re.match(r"\s*\[", line):  # the next table
            break
        if re.match(name, line):
            return n
    return header


INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
"""TOML integers are 64-bit signed: "if an integer cannot be represented losslessly, an error must be thrown"
(TOML 1.0, Integer). tomllib reads any size, and a wider one ended a gates file in an internal error (round 14:
``max = 1`` and 400 zeros overflowed ``float()``; 5,000 digits passed Python's 4,300-digit conversion limit)."""


def parse_toml(path: Path, text: str, error: type[HarnessError] = HarnessError) -> dict[str, Any]:
    """``text`` parsed as TOML, or one ``<file>:<line>: …`` line: invalid TOML, or an integer beyond 64 bits."""
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}:{toml_error_line(exc)}: file: invalid TOML ({exc})") from None
    except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits): no 64-bit integer either
        raise error(f"{path}:{long_number_line(text)}: file: invalid TOML (an integer of thousands of digits; "
                    "TOML integers are 64-bit)") from None
    if (wide := _wide_integer(data, ())) is not None:
        keys, value = wide
        name = next((k for k in reversed(keys) if isinstance(k, str)), "file")
        field = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in keys).lstrip(".")
        raise error(f"{path}:{key_line(text, name)}: {field}: an integer of {value.bit_length()} bits; TOML integers "
                    f"are 64-bit ({INT64_MIN} to {INT64_MAX})")  # not str(value): 5,000 hex digits have no decimal str
    return data


def _wide_integer(value: Any, keys: tuple[str | int, ...]) -> tuple[tuple[str | int, ...], int] | None:
    """(where, value) of the first integer of a parsed TOML value outside 64 bits, else None."""
    if isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
        return keys, value
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if (found := _wide_integer(item, (*keys, key))) is not None:
            return found
    return None
