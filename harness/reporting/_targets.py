"""Where ``atomic_write`` puts a file a user named (issue 33): a symlink's target, a device or FIFO written into, a
file named through a descriptor appended to, never replaced by something else. Found when a probe's
``--output /dev/null`` replaced the machine's /dev/null with a regular file."""

from __future__ import annotations

import errno
import os
import stat
import time
from pathlib import Path
from typing import Final

from harness.errors import HarnessError, one_line


def write_target(path: Path, text: str) -> Path | None:
    """The regular file ``atomic_write`` replaces for ``path`` (a symlink's final target), or None once ``text``
    went into the device or FIFO ``path`` names."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return Path(os.path.realpath(path)) if os.path.islink(path) else path  # a dangling link: its target, as open()
    except NotADirectoryError:
        return path  # mkdir/mkstemp below say which part is not a directory
    alias = str(path).startswith(_DESCRIPTOR_ALIASES)  # another process's open file: appended to, never replaced
    if stat.S_ISREG(mode) and not alias:
        return Path(os.path.realpath(path)) if os.path.islink(path) else path
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISREG(mode):
        fd = _open_reader_end(path, append=stat.S_ISREG(mode))
        try:
            os.set_blocking(fd, True)
            data = memoryview(text.encode("utf-8"))
            while data:
                data = data[os.write(fd, data):]
        finally:
            os.close(fd)
        return None
    kind = "a directory" if stat.S_ISDIR(mode) else "a block device" if stat.S_ISBLK(mode) else "a socket" \
        if stat.S_ISSOCK(mode) else "not a regular file"
    raise HarnessError(f"{one_line(str(path))}: {kind}: expected a file to write")


FIFO_READER_WAIT_S: Final = 2.0
"""How long a FIFO given as an output may go without a reader before writing to it is an error (never a hang)."""


_DESCRIPTOR_ALIASES: Final = ("/dev/stdout", "/dev/stderr", "/dev/fd/", "/proc/")
"""Paths that name an open file descriptor: `-o /dev/stdout >> log` appends to the log (replacing the file it
resolves to would lose what the log held)."""


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
