"""The one seam to the memory directory: a ``Store`` protocol, the real ``FileStore`` and ``InMemoryStore``.

Keys are POSIX paths relative to the memory root (``user/terse.md``, ``MEMORY.md``); the state files that live
beside the root (spec §1.4) are addressed as ``../meta.json``, ``../extract-cursor.json`` and
``../consolidation.lock``, which is exactly where they are on disk. Every write stamps the file's mtime from the
injected clock, so a fake clock gives fake mtimes on either store.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Protocol

from memory_core.clock import Clock, SystemClock
from memory_core.errors import StoreError, UnsafePathError
from memory_core.formats import to_ms

META_KEY: Final = "../meta.json"
CURSOR_KEY: Final = "../extract-cursor.json"
LOCK_KEY: Final = "../consolidation.lock"
INDEX_KEY: Final = "MEMORY.md"
STATE_KEYS: Final = frozenset({META_KEY, CURSOR_KEY, LOCK_KEY})


@dataclass(frozen=True, slots=True)
class FileStat:
    """What a scan needs to know about a file without reading it."""

    mtime_ms: float
    """Modification time, epoch milliseconds (fractional)."""
    size: int
    """Size in bytes."""


class Store(Protocol):
    """Files of one memory root plus its three state files."""

    def list(self) -> list[str]:
        """Every file under the memory root, recursively, as sorted relative keys; ``[]`` when it is absent."""
        ...

    def read(self, key: str) -> str:
        """The UTF-8 text of ``key``; ``FileNotFoundError`` when it is missing."""
        ...

    def write(self, key: str, text: str) -> None:
        """Replace ``key`` atomically (parents created), stamping its mtime with the clock."""
        ...

    def create(self, key: str, text: str) -> bool:
        """Create ``key`` only if it does not exist (``wx``); False when it already existed."""
        ...

    def delete(self, key: str) -> bool:
        """Remove ``key``; False when it was not there."""
        ...

    def stat(self, key: str) -> FileStat | None:
        """mtime and size of ``key``, or None when it is missing."""
        ...

    def set_mtime(self, key: str, mtime_ms: float) -> None:
        """Set the modification time of an existing file (seeding aged memories)."""
        ...


MTIME_STEP_MS: Final = 0.001


def next_mtime_ms(now_ms: float, previous_ms: float | None) -> float:
    """The mtime a write stamps: the clock, but always later than the file's previous mtime.

    Under a fake clock many writes share one instant; without the step a rewrite of the same size would keep its
    (mtime, size) and the scan cache would serve the old text.
    """
    if previous_ms is not None and now_ms <= previous_ms:
        return previous_ms + MTIME_STEP_MS
    return now_ms


def check_key(key: str) -> str:
    """Normalise a key and refuse anything that leaves the memory root (spec §1.5) other than a state file."""
    if "\x00" in key or key.startswith("/") or "\\" in key:
        raise UnsafePathError(f"memory key {key!r} must be a relative POSIX path without NUL or backslash")
    if key in STATE_KEYS:
        return key
    norm = posixpath.normpath(key)
    if norm in (".", "") or norm == ".." or norm.startswith("../"):
        raise UnsafePathError(f"memory key {key!r} points outside the memory root")
    return norm


@dataclass(slots=True)
class FileStore:
    """The real store: a directory on disk, atomic writes (temp file + ``os.replace``), no symlink escapes."""

    root: Path
    clock: Clock = field(default_factory=SystemClock)

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)

    def _check_inside(self, target: Path, key: str) -> None:
        # Resolve the deepest existing ancestor: a symlinked directory must not carry a write outside.
        allowed = Path(os.path.realpath(self.root.parent if key in STATE_KEYS else self.root))
        real = Path(os.path.realpath(target))
        if real != allowed and allowed not in real.parents:
            raise UnsafePathError(f"memory key {key!r} resolves to {real}, outside {allowed} (symlink escape)")

    def list(self) -> list[str]:
        if not self.root.is_dir():
            return []
        keys: list[str] = []
        for dirpath, _dirs, files in os.walk(self.root):
            for name in files:
                rel = os.path.relpath(os.path.join(dirpath, name), self.root)
                keys.append(rel.replace(os.sep, "/"))
        return sorted(keys)

    def read(self, key: str) -> str:
        # newline="": no universal-newline translation, so CRLF files read back byte-for-byte (and stay ignored)
        with open(self._path(key), encoding="utf-8", newline="") as handle:
            return handle.read()

    def write(self, key: str, text: str) -> None:
        target = self._path(key)
        self._check_inside(target, key)  # before mkdir: no directory is created through a symlink either
        previous = self.stat(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self._stamp(target, previous.mtime_ms if previous else None)

    def create(self, key: str, text: str) -> bool:
        target = self._path(key)
        self._check_inside(target, key)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        self._stamp(target, None)
        return True

    def delete(self, key: str) -> bool:
        target = self._path(key)
        try:
            target.unlink()
        except FileNotFoundError:
            return False
        return True

    def stat(self, key: str) -> FileStat | None:
        try:
            st = self._path(key).stat()
        except FileNotFoundError:
            return None
        return FileStat(mtime_ms=st.st_mtime_ns / 1e6, size=st.st_size)

    def set_mtime(self, key: str, mtime_ms: float) -> None:
        ns = round(mtime_ms * 1e6)
        os.utime(self._path(key), ns=(ns, ns))

    def _stamp(self, target: Path, previous_ms: float | None) -> None:
        ns = round(next_mtime_ms(to_ms(self.clock.now()), previous_ms) * 1e6)
        os.utime(target, ns=(ns, ns))


@dataclass(slots=True)
class InMemoryStore:
    """The in-memory twin of ``FileStore``: same keys, same semantics, no disk."""

    clock: Clock = field(default_factory=SystemClock)
    files: dict[str, tuple[str, float]] = field(default_factory=dict)

    def list(self) -> list[str]:
        return sorted(k for k in self.files if k not in STATE_KEYS)

    def read(self, key: str) -> str:
        try:
            return self.files[check_key(key)][0]
        except KeyError:
            raise FileNotFoundError(key) from None

    def write(self, key: str, text: str) -> None:
        norm = check_key(key)
        previous = self.files.get(norm)
        self.files[norm] = (text, next_mtime_ms(to_ms(self.clock.now()), previous[1] if previous else None))

    def create(self, key: str, text: str) -> bool:
        norm = check_key(key)
        if norm in self.files:
            return False
        self.files[norm] = (text, to_ms(self.clock.now()))
        return True

    def delete(self, key: str) -> bool:
        return self.files.pop(check_key(key), None) is not None

    def stat(self, key: str) -> FileStat | None:
        entry = self.files.get(check_key(key))
        if entry is None:
            return None
        return FileStat(mtime_ms=entry[1], size=len(entry[0].encode("utf-8", "surrogatepass")))

    def set_mtime(self, key: str, mtime_ms: float) -> None:
        norm = check_key(key)
        if norm not in self.files:
            raise StoreError(f"cannot set the mtime of missing memory file {key!r}")
        self.files[norm] = (self.files[norm][0], mtime_ms)
