"""Reading one line of a JSONL recording the harness wrote (``cassette.jsonl``, ``proxy.jsonl``): strict JSON, so
a damaged line is a ``(field, what is wrong)`` the reader names with its file and line, never an internal error.

Round 16: a ``proxy.jsonl`` line nested thousands deep (``RecursionError``) or holding an integer of 5,000 digits
(``ValueError``: more than ``int()`` converts; ``cassette.jsonl`` too) ended the run in an internal error; a member
written twice, a status that is no HTTP status (``true``, ``-5``) or a lone surrogate key were read in silence, and
a request recorded twice was answered with the last line, unsaid."""

from __future__ import annotations

import json
from typing import Any, Final

from harness.errors import Duplicate, json_trouble, one_line, unique_members


def strict_json(line: str, *, holder: str = "a recording", constants: bool = False) -> tuple[Any, str | None]:
    """``line`` as JSON text, or what is wrong with it: invalid, nested too deeply, an integer of more digits than
    Python converts, a member twice, a lone surrogate escape, and (unless ``constants``: a cassette's reader takes
    them, as it always has) NaN or Infinity (not JSON). ``holder``: what the empty line's message says holds lines."""
    if not line.strip():
        return None, f"an empty line; {holder} holds one JSON object per line"
    try:
        value = json.loads(line, object_pairs_hook=unique_members, parse_constant=None if constants else _no_constant)
        json.dumps(value, ensure_ascii=False).encode("utf-8")  # a lone surrogate escape (\ud800) is not text
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON: {exc.msg} at column {exc.colno}"
    except UnicodeEncodeError:
        return None, "a lone surrogate escape (\\ud800-\\udfff): not text"
    except Duplicate as exc:
        return None, f"member {one_line(str(exc))[:60]!r} twice in one object (JSON keeps the last without a word)"
    except _Constant as exc:
        return None, f"invalid JSON: {exc} is no JSON value"
    except (RecursionError, ValueError) as exc:
        return None, f"invalid JSON: {json_trouble(exc)}"
    return value, None


class _Constant(ValueError):
    """``NaN``, ``Infinity`` or ``-Infinity``: Python's ``json`` reads them, JSON has no such value."""


def _no_constant(name: str) -> Any:
    raise _Constant(name)


def _shown(value: object) -> str:
    return f"{type(value).__name__} {one_line(json.dumps(value, ensure_ascii=False))[:40]}"


_PROXY_FIELDS: Final = {"key": str, "endpoint": str, "status": int, "response": dict}


def proxy_entry(line: str) -> tuple[dict[str, Any], tuple[str, str] | None]:
    """One ``proxy.jsonl`` line as an entry, or ``(field, what is wrong)``: every field replay reads is checked here
    (``status`` an HTTP status from 100 to 599, the key and the endpoint non-empty text)."""
    value, problem = strict_json(line)
    if problem is not None:
        return {}, ("line", problem)
    if not isinstance(value, dict):
        return {}, ("key", f"expected a JSON object holding it, got {type(value).__name__}")
    for name, kind in _PROXY_FIELDS.items():
        got = value.get(name)
        if type(got) is not kind or (kind is str and not got):
            return {}, (name, "missing" if name not in value else "expected text, not empty" if got == "" else
                        f"expected {kind.__name__}, got {_shown(got)}")
    if not 100 <= value["status"] <= 599:
        return {}, ("status", f"expected an HTTP status from 100 to 599, got {value['status']}")
    return value, None
