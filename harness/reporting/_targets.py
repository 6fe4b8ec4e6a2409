"""Where ``atomic_write`` puts a file a user named (issue 33): a symlink's target, a device or FIFO written into, a
file named through a descriptor appended to, never replaced by something else. Found when a probe's
``--output /dev/null`` replaced the machine's /dev/null with a regular file."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import sys
import tempfile
import time
from pathlib import Path
from typing import Final

from harness.errors import HarnessError, naming, one_line


def write_target(path: Path, text: str) -> Path | None:
    """The regular file ``atomic_write`` replaces for ``path`` (a symlink's final target), or None once ``text``
    went into the device or FIFO ``path`` names."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return Path(os.path.realpath(path)) if os.path.islink(path) else path  # a dangling link: its target, as open()
    except NotADirectoryError:
        return path  # mkdir/mkstemp below say which part is not a directory
    own = _own_descriptor(path)
    if own is not None:  # `-o /dev/stdout > file`: through that descriptor, at its offset, as print() writes
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        _write_all(own, text)
        return None
    alias = _alias(path)  # another process's open file: appended to, never replaced
    if stat.S_ISREG(mode) and not alias:
        return Path(os.path.realpath(path)) if os.path.islink(path) else path
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISREG(mode):
        fd = _open_reader_end(path, append=stat.S_ISREG(mode))
        try:
            os.set_blocking(fd, True)
            _write_all(fd, text)
        finally:
            os.close(fd)
        return None
    kind = "a directory" if stat.S_ISDIR(mode) else "a block device" if stat.S_ISBLK(mode) else "a socket" \
        if stat.S_ISSOCK(mode) else "not a regular file"
    raise HarnessError(f"{one_line(str(path))}: {kind}: expected a file to write")


FIFO_READER_WAIT_S: Final = 2.0
"""How long a FIFO given as an output may go without a reader before writing to it is an error (never a hang)."""


_OWN_FD: Final = re.compile(r"/(?:dev|proc/self|proc/(\d+))/fd/(\d+)")
_STD: Final = {"/dev/stdout": 1, "/dev/stderr": 2}
_MAX_LINKS: Final = 40


def _chain(path: Path) -> list[str]:
    """``path`` and each path its symlinks lead to, normalised (``//dev/./stdout`` is ``/dev/stdout``)."""
    out, here = [], os.path.abspath(path)
    for _ in range(_MAX_LINKS):
        out.append("/" + os.path.normpath(here).lstrip("/"))
        if not os.path.islink(here):
            break
        here = os.path.join(os.path.dirname(here), os.readlink(here))
    return out


def _own_descriptor(path: Path) -> int | None:
    """The descriptor of this process that ``path`` names through ``/dev/stdout``, ``/dev/fd/N`` or
    ``/proc/self/fd/N`` (at any step of its symlinks), or None."""
    for step in _chain(path):
        if step in _STD:
            return _STD[step]
        match = _OWN_FD.fullmatch(step)
        if match and (match[1] is None or int(match[1]) == os.getpid()):
            return int(match[2])
    return None


def wrote(path: Path) -> None:
    """Say ``wrote PATH``: on stdout, unless PATH is stdout itself (then stderr, so the file stays what was asked)."""
    print(f"wrote {one_line(str(path))}", file=sys.stderr if _own_descriptor(path) == 1 else sys.stdout)


def _alias(path: Path) -> bool:
    """``path`` names another process's open file (``/proc/PID/fd/N``): appended to, never replaced."""
    return any(step.startswith("/proc/") for step in _chain(path))


def _write_all(fd: int, text: str) -> None:
    data = memoryview(text.encode("utf-8"))
    while data:
        data = data[os.write(fd, data):]


def _open_reader_end(path: Path, *, append: bool = False) -> int:
    """``path`` opened for writing without waiting for ever: a FIFO no one opens to read within
    ``FIFO_READER_WAIT_S`` is ``ENXIO``, as a non-blocking open says."""
    deadline = time.monotonic() + FIFO_READER_WAIT_S
    while True:
        try:
            return os.open(path, os.O_WRONLY | os.O_NONBLOCK | (os.O_APPEND if append else 0))
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise
            if time.monotonic() > deadline:
                raise HarnessError(f"{one_line(str(path))}: a FIFO no process reads (waited {FIFO_READER_WAIT_S:g} s): "
                                   "start its reader first") from None
            time.sleep(0.02)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: Path, text: str) -> None:
    """Write via a temp file, fsync and ``os.replace``: a reader never sees half a file, a crash never leaves one.
    The file gets the mode a plain ``open()`` would give (0666 less the umask), not mkstemp's 0600. A symlink is
    followed (the file it names is replaced, the link stays); a character device or a FIFO (``/dev/null``,
    ``/dev/stdout``, a pipe) is written into as a shell's ``>`` would, never replaced by a file, and a regular file
    named through a descriptor (``/dev/stdout``, ``/dev/fd/N``, ``/proc/…``) is appended to — a FIFO no one
    reads is an error, not a wait; a directory, a block device or a socket is an error naming the path."""
    with naming(path):
        target = write_target(path, text)
        if target is None:
            return
        path = target
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        except OSError as exc:  # fix (hostile probe, round 11): the line named a random .tmp- file, not the output
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def append_text(path: Path, text: str) -> None:
    """Append ``text`` to ``path`` as a shell's ``>>`` would (the file made when missing). A FIFO no process reads
    within ``FIFO_READER_WAIT_S`` is an error naming it, not a wait.

    fix (hostile probe, round 11): ``$GITHUB_STEP_SUMMARY`` naming such a FIFO blocked the end of ``run`` for ever."""
    try:
        fifo = stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        fifo = False
    if not fifo:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)
        return
    fd = _open_reader_end(path, append=True)
    try:
        os.set_blocking(fd, True)
        _write_all(fd, text)
    finally:
        os.close(fd)
