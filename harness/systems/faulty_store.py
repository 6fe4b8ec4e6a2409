"""I/O fault injection for the reference system: a store whose writes fail or whose files vanish on demand."""

from __future__ import annotations

import errno
import fnmatch
from dataclasses import dataclass, field
from typing import Any

from memory_core.files.store import FileStore, Listing


@dataclass
class IOFault:
    kind: str
    """``write_error`` | ``vanish``."""
    match: str
    remaining: int
    ghosts: list[str] = field(default_factory=list)
    """``vanish``: the deleted files the next listings still name."""


@dataclass
class FaultyStore:
    """Delegates to a ``FileStore``; injected faults fire on matching keys, then disarm after ``times`` uses.

    ``write_error``: ``write``/``create`` raise ``OSError(EIO)`` (a full disk, a revoked mount).
    ``vanish``: matching files are deleted at the next listing, yet that listing and the ``times - 1`` after it
    still name them (a file removed by another process between the scan and the read, or a stale listing):
    every stat and read of them finds them gone.
    """

    inner: FileStore
    faults: list[IOFault] = field(default_factory=list)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def plain_root(self) -> str | None:
        """The inner store's directory while no fault is armed (the recall cache may then read the files directly);
        None while one is, so every read and listing goes through the faults."""
        return None if any(f.remaining > 0 for f in self.faults) else self.inner.plain_root()

    def inject(self, kind: str, match: str, times: int) -> None:
        self.faults.append(IOFault(kind, match, times))

    def _fire(self, kind: str, key: str) -> bool:
        for fault in self.faults:
            if fault.kind == kind and fault.remaining > 0 and fnmatch.fnmatchcase(key, fault.match):
                fault.remaining -= 1
                return True
        return False

    def list(self) -> list[str]:
        return self.listing().keys

    def listing(self) -> Listing:
        """The inner store's listing with the ``vanish`` faults applied (the scan reads this, not ``list``)."""
        listing = self.inner.listing()
        keys = listing.keys
        for fault in self.faults:
            if fault.kind != "vanish" or fault.remaining <= 0:
                continue
            if not fault.ghosts:  # the first listing after arming: the matching files go, their names stay
                fault.ghosts = [k for k in keys if fnmatch.fnmatchcase(k, fault.match)]
                for key in fault.ghosts:
                    self.inner.delete(key)
            if fault.ghosts:
                fault.remaining -= 1
                keys = [*keys, *(g for g in fault.ghosts if g not in keys)]
        return Listing(keys, listing.unlisted)

    def read(self, key: str) -> str:
        return self.inner.read(key)

    def write(self, key: str, text: str) -> None:
        if self._fire("write_error", key):
            raise OSError(errno.EIO, "injected fault: write failed", key)
        self.inner.write(key, text)

    def create(self, key: str, text: str) -> bool:
        if self._fire("write_error", key):
            raise OSError(errno.EIO, "injected fault: write failed", key)
        return self.inner.create(key, text)

    def delete(self, key: str) -> bool:
        return self.inner.delete(key)

    def stat(self, key: str) -> Any:
        return self.inner.stat(key)

    def set_mtime(self, key: str, mtime_ms: float) -> None:
        self.inner.set_mtime(key, mtime_ms)
