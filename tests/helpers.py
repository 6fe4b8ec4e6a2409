"""Small builders shared by tests."""

from __future__ import annotations

from memory_core.formats import to_ms
from memory_core.store import Store
from memory_core.topic import MemoryType, render_topic


def put_doc(
    store: Store,
    path: str,
    kind: MemoryType,
    body: str,
    *,
    name: str | None = None,
    description: str = "",
    mtime_ms: float | None = None,
) -> None:
    """Write a topic file, optionally with a given mtime."""
    store.write(path, render_topic(name=name or path, description=description, kind=kind, body=body))
    if mtime_ms is not None:
        store.set_mtime(path, mtime_ms)


def raw_doc(store: Store, path: str, text: str, *, mtime_ms: float | None = None) -> None:
    """Write raw file text."""
    store.write(path, text)
    if mtime_ms is not None:
        store.set_mtime(path, mtime_ms)


__all__ = ["put_doc", "raw_doc", "to_ms"]
