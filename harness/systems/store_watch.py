"""A shipped system's store that vanishes while a scenario runs: deleted, or replaced by a file, a symlink, a FIFO
or another directory or database (another process, a cleanup job, a test's own hand).

Before round 15b the reference system read a missing or replaced memory root as an empty memory (its recalls
selected nothing, its dreams were ``skipped: locked`` or ``noop``: every probe failed or passed for a reason nobody
stated), and the SQLite system went on writing into the unlinked database file. What a vanished store is, for both:

- ``StoreWatch`` takes the identity (device, inode, kind) of each path the store lives in as it is first seen (at
  set-up, or once a seed or an operation made it), and ``problem()`` names the first that is gone or is no longer
  that directory or file since;
- ``watched`` wraps an adapter's operations: ``extract``, ``dream``, ``recall`` and ``forget`` checked before and after
  the call return their failed result (``status: failed`` / ``error``) naming the store, so its probe row carries
  that message; a recall or forget step fails with it (``recall failed: memory store …: deleted while the scenario
  ran``) and ``documents()`` is then empty (what a vanished store holds), so the probe row is written. Before
  that, ``documents()`` raises as the reads do (a failed extract or dream is an outcome a scenario may expect, so
  the step, or the next one, fails on it; a store that vanished after the last operation is never read as empty
  in silence); the harness's other reads and the set-up steps (``index_text()``, ``add_turns``, ``plant_lock``, …)
  raise ``StoreError`` with the same line, which fails the scenario run at that step as the system's failure. The
  other scenarios run on and every output is written (docs/system-protocol.md, "When your system fails").
"""

from __future__ import annotations

import functools
import os
import stat
import weakref
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

from harness.system import DreamResult, ExtractResult, ForgetResult, RecallResult
from memory_core.errors import StoreError

C = TypeVar("C", bound=type)
_KINDS: Final = ((stat.S_ISLNK, "a symlink"), (stat.S_ISREG, "a file"), (stat.S_ISDIR, "a directory"),
                 (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"),
                 (stat.S_ISBLK, "a device"))


def _close(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "something else")


class StoreWatch:
    """The paths a store lives in (directories or files), as each was when first seen: at set-up, or later for one
    the system makes on its first write (the file core's memory root; an adapter does not make it, so a system that
    fails to is still seen failing). Each is held open (``O_PATH``) while the watch lives, so a path deleted and made
    again cannot reuse its inode unseen. A path never seen yet is no problem: the store has not made it."""

    def __init__(self, workdir: Path, what: str, paths: Sequence[Path]) -> None:
        self.workdir, self.what = workdir, what
        self.reported = False
        """A failed recall or forget has named the vanished store (``documents()`` is then empty, not an error)."""
        self.fds: list[int] = []
        self.close = weakref.finalize(self, _close, self.fds)
        """Close the paths (once; also when the watch is collected)."""
        self.known: list[tuple[Path, os.stat_result | None]] = [(path, None) for path in paths]
        self._see()

    def _see(self) -> None:
        """Take the identity of each path not seen before that exists now."""
        flags = getattr(os, "O_PATH", os.O_RDONLY) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        for i, (path, was) in enumerate(self.known):
            if was is None:
                try:
                    fd = os.open(path, flags)
                except OSError:
                    continue  # not made yet (or not a plain path: then its first check says so)
                self.fds.append(fd)
                self.known[i] = (path, os.fstat(fd))

    def problem(self) -> str | None:
        """``<what> <path>: deleted while the scenario ran …`` for the first path gone or replaced since it was
        first seen, else None."""
        for path, was in self.known:
            if was is None:
                continue
            try:
                now = os.lstat(path)
            except FileNotFoundError:
                how = "deleted"
            except OSError as exc:
                how = f"cannot be reached ({exc.strerror or exc})"
            else:
                if (now.st_dev, now.st_ino) == (was.st_dev, was.st_ino) and _kind(now.st_mode) == _kind(was.st_mode):
                    continue
                how = f"replaced by {_kind(now.st_mode)}" if _kind(now.st_mode) != _kind(was.st_mode) \
                    else f"replaced by another {_kind(now.st_mode).removeprefix('a ')}"
            where = path.relative_to(self.workdir) if path.is_relative_to(self.workdir) else path
            return f"{self.what} {where}: {how} while the scenario ran (the store vanished; what it held is gone)"
        self._see()
        return None


FAILED: Final[dict[str, Callable[[str, dict[str, Any]], object]]] = {
    "extract": lambda gone, kw: ExtractResult("failed", str(kw.get("strategy", "heuristic")), error=gone),
    "dream": lambda gone, kw: DreamResult("failed", str(kw.get("strategy", "heuristic")), error=gone),
    "recall": lambda gone, kw: RecallResult((), "none", error=gone),
    "forget": lambda gone, kw: ForgetResult((), "none", error=gone),
}
"""The failed result each operation returns when its store vanished before or during it."""


def watched(reads: Iterable[str]) -> Callable[[C], C]:
    """A class decorator: the operations of ``FAILED`` and the methods named in ``reads`` check ``self.watch``."""

    def wrap_operation(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def checked(self: Any, *args: Any, **kwargs: Any) -> Any:
            gone = self.watch.problem()
            if gone is None:
                result = method(self, *args, **kwargs)
                gone = self.watch.problem()  # vanished meanwhile: what it answered is not the store's
                if gone is None:
                    return result
            # a failed recall or forget fails its step with this error; a failed extract or dream may be an outcome
            # a scenario expects, so documents() still raises after one (the step then fails, naming the store)
            self.watch.reported |= name in ("recall", "forget")
            return FAILED[name](gone, kwargs)
        return checked

    def wrap_read(method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def checked(self: Any, *args: Any, **kwargs: Any) -> Any:
            if gone := self.watch.problem():
                raise StoreError(gone)
            result = method(self, *args, **kwargs)
            if gone := self.watch.problem():
                raise StoreError(gone)
            return result
        return checked

    def decorate(cls: C) -> C:
        for name in FAILED:
            setattr(cls, name, wrap_operation(name, getattr(cls, name)))
        for name in reads:
            setattr(cls, name, wrap_read(getattr(cls, name)))
        documents = cls.documents  # type: ignore[attr-defined]

        @functools.wraps(documents)
        def gone_is_empty(self: Any) -> Any:
            if (gone := self.watch.problem()) and not self.watch.reported:
                raise StoreError(gone)
            return [] if gone else documents(self)  # what a vanished store holds, once a result said why: nothing
        cls.documents = gone_is_empty  # type: ignore[attr-defined]
        inner = getattr(cls, "close", None)

        def close(self: Any) -> None:  # the system's own close(), then the watch's paths
            try:
                if inner is not None:
                    inner(self)
            finally:
                self.watch.close()
        cls.close = close  # type: ignore[attr-defined]
        return cls
    return decorate
