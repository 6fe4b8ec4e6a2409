"""Writing a run directory's files (issue 34): each text file in one buffered pass, and the report beside the
others: with ``--jobs N`` of 2 or more, a forked process renders ``report.html`` (about two thirds of writing a run
directory) while this one writes the rest.

Writing a run's files is the serial tail of a ``--jobs`` run: at 1,000 scenarios × 2 systems it took ~3 s of a
~15 s ``--jobs 2`` run, and that tail alone held the speed-up under 1.7×. The forked process reads only by
position (``os.pread``: the spools' open files, and so their offsets, are shared with this process), writes one
new file of the staged directory, and leaves with ``os._exit`` (no exit handler of the run runs twice). When it
fails in any way, this process writes the report itself, as a serial run does, so the error a user sees is the
one a ``--jobs 1`` run gives. ``--jobs 1`` runs stay on one process: that is what the option promises."""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO, Final

from harness.errors import child_signals

Writer = Callable[[IO[bytes]], None]
"""One file's writer: given the open file, it writes the whole content."""
ASIDE: Final = "report.html"
"""The file a forked process writes: the one that costs the most."""


def put_each(stage: Path, writers: Mapping[str, Writer],
             put: Callable[[Path, Writer], None], *, workers: int) -> None:
    """Every file of ``writers`` into directory ``stage`` by ``put(path, write)``; the report by a forked process
    when ``workers`` ≥ 2 and this system forks safely (Linux), the others here meanwhile."""
    pid = _fork_put(stage / ASIDE, writers[ASIDE], put) if ASIDE in writers and _forks(workers) else None
    try:
        for name, write in writers.items():
            if pid is None or name != ASIDE:
                put(stage / name, write)
        written = pid is None or _done(pid)
    except BaseException:  # failed or stopped (Ctrl-C) meanwhile: the forked process goes too
        if pid is not None:
            _end(pid)
        raise
    if not written:
        (stage / ASIDE).unlink(missing_ok=True)  # the forked process failed: written here, its error ours
        put(stage / ASIDE, writers[ASIDE])


def text_writer(chunks: Callable[[], Iterable[str]]) -> Writer:
    """A writer of the text pieces ``chunks()`` yields, UTF-8, joined 4,096 pieces at a time: the report comes in
    ~230 pieces per scenario run, and a Python ``encode`` and ``write`` per piece cost 0.2 s of its 1,000 × 2 runs'
    report (issue 34). Every write goes straight to ``handle`` (no wrapper that could close it when collected)."""
    def write(handle: IO[bytes]) -> None:
        pieces = iter(chunks())
        while batch := list(itertools.islice(pieces, 4096)):
            handle.write("".join(batch).encode())

    return write


def _forks(workers: int) -> bool:
    return workers >= 2 and sys.platform == "linux" and hasattr(os, "fork")


def _fork_put(path: Path, write: Writer,
              put: Callable[[Path, Writer], None]) -> int | None:
    """The forked process's pid (None: no process could be forked, the report is written here)."""
    for stream in (sys.stdout, sys.stderr):  # nothing buffered here is written twice
        with contextlib.suppress(Exception):
            stream.flush()
    try:
        pid = os.fork()
    except OSError:
        return None
    if pid:
        return pid
    code = 1
    try:
        child_signals(pool=True)  # Ctrl-C and SIGTERM are the run's; it ends with the run, however the run ends
        put(path, write)
        code = 0
    except BaseException:  # the run writes the report itself and reports what fails
        pass
    finally:
        os._exit(code)


def _done(pid: int) -> bool:
    """Whether the forked process wrote its file (reaped either way)."""
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def _end(pid: int) -> None:
    """The forked process killed and reaped: this process failed or was stopped while it wrote."""
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
