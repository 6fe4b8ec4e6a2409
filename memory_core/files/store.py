"""The one seam to the memory directory: a ``Store`` protocol, the real ``FileStore`` and ``InMemoryStore``.

Keys are POSIX paths relative to the memory root (``user/terse.md``, ``MEMORY.md``); the state files that live
beside the root (spec §1.4) are addressed as ``../meta.json``, ``../extract-cursor.json`` and
``../consolidation.lock``, which is exactly where they are on disk. Every write stamps the file's mtime from the
injected clock, so a fake clock gives fake mtimes on either store.

Crash and hostile-input safety of ``FileStore`` (issues 14, 23):

- every write and create is atomic: the bytes go to a temp file in the target's directory, are fsynced and stamped,
  then ``os.replace`` (write) or ``os.link`` (create: fails when the target exists) puts them in place, so a kill
  leaves either the old file or the whole new one, never an empty or partial file;
- reads take regular files only (a FIFO, a device or a directory is refused without blocking), at most
  ``MAX_FILE_BYTES`` bytes (a bigger file is refused, so a symlink to ``/dev/zero`` cannot hang or exhaust memory),
  and never through a symlink whose target leaves the root (``UnsafePathError``);
- deletes and mtime updates never act through a symlinked directory that leaves the root.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import stat as stat_mod
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Protocol

from memory_core.clock import Clock, SystemClock
from memory_core.errors import StoreError, UnsafePathError
from memory_core.files.formats import ms_to_ns, ns_to_ms, to_ms

META_KEY: Final = "../meta.json"
CURSOR_KEY: Final = "../extract-cursor.json"
LOCK_KEY: Final = "../consolidation.lock"
INDEX_KEY: Final = "MEMORY.md"
INDEX_DIRTY_KEY: Final = ".index-rebuild.pending"
"""Marker (inside the root, hidden from ``list``) written before topic files change and removed once ``MEMORY.md``
is rebuilt: a crash in between leaves it, and the next operation rebuilds the stale index."""
STATE_KEYS: Final = frozenset({META_KEY, CURSOR_KEY, LOCK_KEY})
HIDDEN_KEYS: Final = frozenset({INDEX_DIRTY_KEY})
"""Bookkeeping files inside the root that ``list`` never reports."""
TEMP_PREFIX: Final = ".tmp-"
"""Temp files of atomic writes; a kill can leave one behind, and ``list`` never reports them."""
MAX_FILE_BYTES: Final = 1 << 20
"""The largest file ``FileStore.read`` returns (1 MiB); a bigger one is refused with ``StoreError``."""


@dataclass(frozen=True, slots=True)
class Listing:
    """What ``FileStore.listing`` found: the keys, and the folders under the root it could not list."""

    keys: list[str]
    """As ``list`` returns them."""
    unlisted: tuple[tuple[str, str], ...] = ()
    """``(folder key ending in "/", why)`` of each folder below the root whose entries could not be read (its
    files are missing from ``keys``); scans report them and the index rebuild keeps their lines."""


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
        raise UnsafePathError(f"memory key {key!r} must be a relative POSIX path without NUL or backslash",
                              reason="bad_key")
    if key in STATE_KEYS:
        return key
    norm = posixpath.normpath(key)
    if norm in (".", "") or norm == ".." or norm.startswith("../"):
        raise UnsafePathError(f"memory key {key!r} points outside the memory root", reason="outside_root")
    return norm


FSYNC_ENV: Final = "MEMORY_CORE_FSYNC"
"""Set to ``0`` to skip the fsync of each write (throwaway test directories only; atomicity is kept)."""


def _fsync_close(fd: int, data: bytes, *, sync: bool = True) -> None:
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if sync and os.environ.get(FSYNC_ENV, "1") != "0":
            os.fsync(fd)
    finally:
        os.close(fd)


def _why(exc: OSError) -> str:
    """An OS error without its path (the caller names the place): ``PermissionError: Permission denied``."""
    return f"{type(exc).__name__}: {exc.strerror or exc}"


def _symlink_on_the_way(root: Path, key: str) -> bool:
    """Whether a component of ``key`` (a normalised key: no ``..``) under ``root`` is a symlink, or cannot be told;
    a component that does not exist yet ends the walk (nothing beyond it exists to follow)."""
    path = os.fspath(root)
    for part in key.split("/"):
        path = os.path.join(path, part)
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return False
        except OSError:
            return True
        if stat_mod.S_ISLNK(mode):
            return True
    return False


@dataclass(slots=True)
class FileStore:
    """The real store: a directory on disk, atomic writes (temp file + fsync + ``os.replace``/``os.link``),
    bounded regular-file reads, no symlink escapes."""

    root: Path
    clock: Clock = field(default_factory=SystemClock)
    durable: bool = True
    """fsync every write before it replaces the old file. False only for scratch set-up that nothing outlives
    (a harness seeding a throwaway directory); writes stay atomic either way."""
    _plain: bool | None = field(default=None, init=False, repr=False, compare=False)

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)

    def plain_root(self) -> str | None:
        """The directory this store reads from unaltered, for a scan that reads the files directly (the recall
        cache's fast path); None for a subclass, which may change what reading returns."""
        return os.fspath(self.root) if type(self) is FileStore else None

    def _allowed(self, key: str) -> Path:
        return Path(os.path.realpath(self.root.parent if key in STATE_KEYS else self.root))

    def _root_is_plain(self) -> bool:
        """Whether the root's path has no symlink (its real path is its absolute path); asked once per store."""
        if self._plain is None:
            self._plain = os.path.realpath(self.root) == os.path.abspath(self.root)
        return self._plain

    def _check_inside(self, target: Path, key: str) -> None:
        # The common case costs one lstat per component of the key: with no symlink between a plain root and the
        # file, the file is inside. Otherwise (a symlink on the way, a state file beside the root) resolve the
        # deepest existing ancestor: a symlinked directory must not carry a read or a write outside.
        if key not in STATE_KEYS and self._root_is_plain() and not _symlink_on_the_way(self.root, key):
            return
        allowed = self._allowed(key)
        real = Path(os.path.realpath(target))
        if real != allowed and allowed not in real.parents:
            raise UnsafePathError(f"memory key {key!r} resolves to {real}, outside {allowed} (symlink escape)",
                                  reason="symlink_escape")

    def list(self) -> list[str]:
        return self.listing().keys

    def listing(self) -> Listing:
        """``list`` and the folders it could not read. A root that exists but cannot be listed (no permission on it
        or on a folder above it) is a ``StoreError`` naming it: an empty memory would be a lie."""
        try:
            if not self.root.is_dir():
                return Listing([])
        except OSError as exc:  # fix: a folder above the root without search permission raised a raw PermissionError
            raise StoreError(f"memory root {self.root}: cannot be reached ({_why(exc)})") from exc
        unlisted: list[tuple[str, str]] = []

        def failed(exc: OSError) -> None:
            folder = os.path.relpath(exc.filename, self.root) if isinstance(exc.filename, str) else "."
            if folder == ".":
                raise StoreError(f"memory root {self.root}: cannot be listed ({_why(exc)})") from exc
            unlisted.append((folder.replace(os.sep, "/") + "/", f"unreadable: {_why(exc)}"))

        keys: list[str] = []
        # fix: os.walk skipped a folder it could not read in silence, and its memories vanished from every scan
        for dirpath, _dirs, files in os.walk(self.root, onerror=failed):
            for name in files:
                if name.startswith(TEMP_PREFIX) or (name in HIDDEN_KEYS and dirpath == str(self.root)):
                    continue  # a write a kill interrupted, or bookkeeping: never a memory file
                rel = os.path.relpath(os.path.join(dirpath, name), self.root)
                keys.append(rel.replace(os.sep, "/"))
        return Listing(sorted(keys), tuple(sorted(unlisted)))

    def read(self, key: str) -> str:
        # newline="" semantics: no universal-newline translation, so CRLF files read back byte-for-byte
        return self.read_bytes(key).decode("utf-8")

    def read_bytes(self, key: str) -> bytes:
        """The bytes of a regular file inside the root, at most ``MAX_FILE_BYTES``; ``FileNotFoundError`` when
        missing, ``UnsafePathError`` through a symlink leaving the root, ``StoreError`` for a non-regular or
        oversized file."""
        target = self._path(key)
        if not os.path.lexists(target):
            raise FileNotFoundError(2, "No such file or directory", str(target))
        self._check_inside(target, key)
        # O_NONBLOCK: opening a FIFO must not wait for a writer; the fstat below then refuses it
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        try:
            info = os.fstat(fd)
            if not stat_mod.S_ISREG(info.st_mode):
                raise StoreError(f"{key.removeprefix('../')}: not a regular file (refused)")
            if info.st_size > MAX_FILE_BYTES:
                raise StoreError(f"{key.removeprefix('../')}: {info.st_size} bytes, over the {MAX_FILE_BYTES}-byte "
                                 "limit (refused)")
            chunks: list[bytes] = []
            remaining = MAX_FILE_BYTES + 1
            while remaining > 0:
                chunk = os.read(fd, min(remaining, 1 << 16))
                if not chunk:
                    break
                chunks.append(chunk)
                remaining -= len(chunk)
        finally:
            os.close(fd)
        if remaining <= 0:
            raise StoreError(f"{key.removeprefix('../')}: grew over the {MAX_FILE_BYTES}-byte limit (refused)")
        return b"".join(chunks)

    def _put(self, key: str, text: str, *, exclusive: bool) -> bool:
        data = text.encode("utf-8")  # before any file exists: an unencodable text leaves everything as it was
        target = self._path(key)
        self._check_inside(target, key)  # before mkdir: no directory is created through a symlink either
        previous = None if exclusive else self.stat(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=target.parent)
        try:
            _fsync_close(fd, data, sync=self.durable)
            self._stamp(Path(tmp), previous.mtime_ms if previous else None)  # the file appears already stamped
            if exclusive:
                try:
                    os.link(tmp, target)  # atomic, and fails when the target exists
                except FileExistsError:
                    return False
                return True
            os.replace(tmp, target)
            return True
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def write(self, key: str, text: str) -> None:
        self._put(key, text, exclusive=False)

    def create(self, key: str, text: str) -> bool:
        return self._put(key, text, exclusive=True)

    def delete(self, key: str) -> bool:
        target = self._path(key)
        self._check_inside(target.parent, key)  # unlink acts on the link itself, never through a directory link
        try:
            target.unlink()
        except FileNotFoundError:
            return False
        return True

    def stat(self, key: str) -> FileStat | None:
        try:
            st = self._path(key).stat()
        except (FileNotFoundError, NotADirectoryError):
            return None
        return FileStat(mtime_ms=ns_to_ms(st.st_mtime_ns), size=st.st_size)

    def set_mtime(self, key: str, mtime_ms: float) -> None:
        target = self._path(key)
        self._check_inside(target, key)
        ns = ms_to_ns(mtime_ms)
        os.utime(target, ns=(ns, ns))

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold an OS-level lock (``flock``) on the state directory itself across processes (no extra file); used
        by the dream lock so that check-stale, delete and create happen as one step."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: the atomic create alone decides
            yield
            return
        self.root.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the flock

    def _stamp(self, target: Path, previous_ms: float | None) -> None:
        ns = ms_to_ns(next_mtime_ms(to_ms(self.clock.now()), previous_ms))
        os.utime(target, ns=(ns, ns))


@dataclass(slots=True)
class InMemoryStore:
    """The in-memory twin of ``FileStore``: same keys, same semantics, no disk."""

    clock: Clock = field(default_factory=SystemClock)
    files: dict[str, tuple[str, float]] = field(default_factory=dict)
    _guard: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """The in-process twin of ``FileStore.exclusive``."""
        with self._guard:
            yield

    def list(self) -> list[str]:
        return sorted(k for k in self.files if k not in STATE_KEYS and k not in HIDDEN_KEYS)

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
