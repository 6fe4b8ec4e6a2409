"""State files beside the memory root: scaffold, ``meta.json`` and ``extract-cursor.json`` (spec §1.6-§1.8).

fix: spec §1.7/§1.8 — upstream fails every extraction (and dream) for good once a state file is empty or corrupt
(a kill between create and write left exactly that). Here a state file that is missing a JSON object — empty,
invalid, nested deeper than ``MAX_STATE_DEPTH``, bigger than ``MAX_STATE_CHARS``, holding numbers Python refuses,
not UTF-8, not a regular file — is ignored with a warning naming the file (passed to ``warn``), the defaults are
used, and the next write rebuilds it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any, Final

from memory_core.files.formats import dump_json, iso_ms
from memory_core.files.store import CURSOR_KEY, INDEX_KEY, META_KEY, Store

SCHEMA_VERSION: Final = 1
EPOCH_ISO: Final = "1970-01-01T00:00:00.000Z"
MAX_STATE_CHARS: Final = 64 * 1024
MAX_STATE_DEPTH: Final = 32
Warn = Callable[[str], None]


def _ignore(_message: str) -> None:
    """The default ``warn``: drop the warning."""


def default_meta(now: datetime) -> dict[str, Any]:
    """``{"version": 1, "createdAt": now, "updatedAt": now}``."""
    stamp = iso_ms(now)
    return {"version": SCHEMA_VERSION, "createdAt": stamp, "updatedAt": stamp}


def scaffold(store: Store, *, now: datetime) -> None:
    """Create the index, ``meta.json`` and the cursor only where missing (exclusive create; spec §1.6)."""
    store.create(INDEX_KEY, "")
    store.create(META_KEY, dump_json(default_meta(now)))
    store.create(CURSOR_KEY, dump_json({"updatedAt": iso_ms(now)}))


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if level > MAX_STATE_DEPTH:
            return level
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
    return deepest


def _problem(store: Store, key: str) -> tuple[dict[str, Any] | None, str | None]:
    try:
        text = store.read(key)
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as exc:
        return None, f"unreadable ({type(exc).__name__}: {exc})"
    if not text.strip():
        return None, "empty"
    if len(text) > MAX_STATE_CHARS:
        return None, f"{len(text)} characters, over the {MAX_STATE_CHARS}-character limit"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"line {exc.lineno}: invalid JSON ({exc.msg})"
    except (ValueError, RecursionError) as exc:
        return None, f"invalid JSON ({type(exc).__name__}: {str(exc)[:80]})"
    if not isinstance(data, dict):
        return None, f"expected a JSON object, got {type(data).__name__}"
    if _depth(data) > MAX_STATE_DEPTH:
        return None, f"nested deeper than {MAX_STATE_DEPTH} levels"
    return data, None


def _read_json(store: Store, key: str, warn: Warn) -> dict[str, Any] | None:
    data, problem = _problem(store, key)
    if problem is not None:
        warn(f"{key.removeprefix('../')}: {problem}; ignored, defaults used and the file rebuilt on the next write")
    return data


def read_meta(store: Store, *, warn: Warn = _ignore) -> dict[str, Any] | None:
    """``meta.json`` as a dict; None when missing or unusable (then ``warn`` is told why, naming the file)."""
    return _read_json(store, META_KEY, warn)


def update_meta(store: Store, *, now: datetime, warn: Warn = _ignore, **fields: Any) -> dict[str, Any]:
    """Read, patch (``updatedAt`` = now plus ``fields``, insertion order kept), write (spec §1.7).

    An unusable ``meta.json`` is replaced by the defaults plus ``fields``.
    """
    meta = read_meta(store, warn=warn) or default_meta(now)
    meta["updatedAt"] = iso_ms(now)
    meta.update(fields)
    store.write(META_KEY, dump_json(meta))
    return meta


def update_meta_best_effort(store: Store, *, now: datetime, warn: Warn = _ignore, **fields: Any) -> None:
    """``update_meta`` that swallows storage errors, as most upstream writers do (spec §1.7)."""
    with contextlib.suppress(OSError, ValueError):
        update_meta(store, now=now, warn=warn, **fields)


def read_cursor(store: Store, *, warn: Warn = _ignore) -> dict[str, Any]:
    """The extract cursor; missing or unusable → epoch stamp (the latter with a warning naming the file)."""
    return _read_json(store, CURSOR_KEY, warn) or {"updatedAt": EPOCH_ISO}


def write_cursor(store: Store, *, session_id: str, processed_offset: int, now: datetime) -> dict[str, Any]:
    """Write ``{sessionId, processedOffset, updatedAt}`` in that key order."""
    cursor = {"sessionId": session_id, "processedOffset": processed_offset, "updatedAt": iso_ms(now)}
    store.write(CURSOR_KEY, dump_json(cursor))
    return cursor
