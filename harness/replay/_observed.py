"""The system as the replay reads it: its record list fetched once per store state the harness can tell apart."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from harness.replay._protocol import MemoryRecord

READS: Final = frozenset({"documents", "index_text", "loaded_index", "stray_files", "lock_held", "system_check",
                          "topic_docs"})
"""Methods that only look: calling them keeps the cached records."""


class Observed:
    """Wraps a ``MemorySystem``. ``documents()`` is asked once and reused until the harness calls anything else on
    the system (an operation, a seed, a lock, a fault), which may change the store and so drops the cached list,
    or the next step begins (``refresh``: what a system reports may depend on its clock).

    A check step asks for the records four or five times (coverage, entry counts, files, store shape); without
    this each ask re-listed the whole store."""

    __slots__ = ("_docs", "_system")

    def __init__(self, system: Any) -> None:
        self._system = system
        self._docs: list[MemoryRecord] | None = None

    @property
    def inner(self) -> Any:
        return self._system

    def refresh(self) -> None:
        """Drop the cached records (the replay calls this at every step: a clock advance changes no call)."""
        self._docs = None

    def documents(self) -> list[MemoryRecord]:
        if self._docs is None:
            self._docs = list(self._system.documents())
        return self._docs

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._system, name)
        if name in READS or not callable(value):
            return value
        return self._changing(value)

    def _changing(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            self._docs = None
            try:
                return method(*args, **kwargs)
            finally:
                self._docs = None
        return call
