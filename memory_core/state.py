"""State files beside the memory root: scaffold, ``meta.json`` and ``extract-cursor.json`` (spec §1.6-§1.8)."""

from __future__ import annotations

import contextlib
import json
from datetime import datetime
from typing import Any, Final

from memory_core.errors import StoreError
from memory_core.formats import dump_json, iso_ms
from memory_core.store import CURSOR_KEY, INDEX_KEY, META_KEY, Store

SCHEMA_VERSION: Final = 1
EPOCH_ISO: Final = "1970-01-01T00:00:00.000Z"


def default_meta(now: datetime) -> dict[str, Any]:
    """``{"version": 1, "createdAt": now, "updatedAt": now}``."""
    stamp = iso_ms(now)
    return {"version": SCHEMA_VERSION, "createdAt": stamp, "updatedAt": stamp}


def scaffold(store: Store, *, now: datetime) -> None:
    """Create the index, ``meta.json`` and the cursor only where missing (exclusive create; spec §1.6)."""
    store.create(INDEX_KEY, "")
    store.create(META_KEY, dump_json(default_meta(now)))
    store.create(CURSOR_KEY, dump_json({"updatedAt": iso_ms(now)}))


def _read_json(store: Store, key: str) -> dict[str, Any] | None:
    try:
        text = store.read(key)
    except FileNotFoundError:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StoreError(f"{key.removeprefix('../')}: line {exc.lineno}: invalid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise StoreError(f"{key.removeprefix('../')}: expected a JSON object, got {type(data).__name__}")
    return data


def read_meta(store: Store) -> dict[str, Any] | None:
    """``meta.json`` as a dict, None when missing; a parse error raises ``StoreError`` (spec §6.2 step 2)."""
    return _read_json(store, META_KEY)


def update_meta(store: Store, *, now: datetime, **fields: Any) -> dict[str, Any]:
    """Read, patch (``updatedAt`` = now plus ``fields``, insertion order kept), write (spec §1.7)."""
    meta = read_meta(store) or default_meta(now)
    meta["updatedAt"] = iso_ms(now)
    meta.update(fields)
    store.write(META_KEY, dump_json(meta))
    return meta


def update_meta_best_effort(store: Store, *, now: datetime, **fields: Any) -> None:
    """``update_meta`` that swallows storage errors, as most upstream writers do (spec §1.7)."""
    with contextlib.suppress(OSError):
        update_meta(store, now=now, **fields)


def read_cursor(store: Store) -> dict[str, Any]:
    """The extract cursor; missing → epoch stamp; any other error propagates (spec §1.8)."""
    return _read_json(store, CURSOR_KEY) or {"updatedAt": EPOCH_ISO}


def write_cursor(store: Store, *, session_id: str, processed_offset: int, now: datetime) -> dict[str, Any]:
    """Write ``{sessionId, processedOffset, updatedAt}`` in that key order."""
    cursor = {"sessionId": session_id, "processedOffset": processed_offset, "updatedAt": iso_ms(now)}
    store.write(CURSOR_KEY, dump_json(cursor))
    return cursor
