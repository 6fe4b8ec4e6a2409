"""The plumbing every child process that runs a plug-in system's code shares (issue 33): how it starts (Ctrl-C and
stdout stay the parent's, its temporary files in a directory the parent removes), how it says what it is calling
(``CallWatch``: shared memory the parent's watchdog reads), how it answers (one JSON message, never a pickle: the
parent never runs code the system built) and how the parent waits for that answer without waiting for ever
(``ask``). Used by the isolated replays (``_isolated``), the plug-in inspection (``_inspect``) and the isolated
property runs (``harness/tools/_fuzz_isolated.py``)."""

from __future__ import annotations

import contextlib
import ctypes
import json
import multiprocessing as mp
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, Final

from harness.errors import child_signals

_NAME_BYTES: Final = 64
_PR_SET_CHILD_SUBREAPER: Final = 36


def exit_text(code: int | None) -> str:
    """How a child process ended, in words: ``exit code 0: os._exit() or a crash``, ``killed by SIGSEGV``."""
    if code is None:
        return "no exit code"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
    return f"exit code {code}: os._exit() or a crash"


def kill_group(process: Any) -> None:
    """Kill ``process`` and every process it left in its group (``enter_child`` made it a group leader: what a
    plug-in forked goes with it), then reap it."""
    if process.is_alive():  # what left the group (os.setsid) but is still its descendant (enter_child: a subreaper)
        kill_descendants(process.pid)
    with contextlib.suppress(OSError):
        os.killpg(process.pid, signal.SIGKILL)
    if process.is_alive():
        process.kill()
    process.join()


def enter_child(tmp: str | None) -> None:
    """First thing in a child: its own process group (``kill_group``); Ctrl-C is the parent's (it stops this
    process); the system's raw writes to file descriptor 1 and its ``print()`` go to stderr, never into the
    harness's stdout, whatever ``sys.stdout`` was (a library caller's, a test's); temporary files go under ``tmp``,
    which the parent removes however this ends."""
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)  # a group of its own: the parent kills what the system forks along with it
    with contextlib.suppress(Exception):  # Linux: what the system forks and orphans stays this process's descendant
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    child_signals()
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    if tmp is not None:
        os.environ["TMPDIR"] = tempfile.tempdir = tmp


def kill_descendants(root: int) -> None:
    """SIGKILL every process descended from ``root`` (read from ``/proc``; nothing where there is none), twice over
    for one forked meanwhile. Round 14b: a plug-in's child that called ``os.setsid()`` left the process group
    ``kill_group`` kills and outlived the run (holding its pipes: a caller reading them waited for it)."""
    for _ in range(2):
        parents: dict[int, list[int]] = {}
        with contextlib.suppress(OSError):
            for entry in os.listdir("/proc"):
                if not entry.isdigit():
                    continue
                try:
                    with open(f"/proc/{entry}/stat", "rb") as f:
                        stat = f.read()
                    parents.setdefault(int(stat[stat.rindex(b")") + 2:].split()[1]), []).append(int(entry))
                except (OSError, ValueError, IndexError):
                    continue
        todo, found = [root], []
        while todo:
            for pid in parents.get(todo.pop(), ()):
                found.append(pid)
                todo.append(pid)
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if not found:
            return


def leave(conn: Connection, message: Any) -> None:
    """Send ``message`` as JSON (a value that is none is sent as the error it raises) and end this process now,
    without waiting for threads the system left running."""
    try:
        data = json.dumps(message).encode("utf-8", "surrogatepass")
    except Exception as exc:
        from harness.replay._observed import describe

        data = json.dumps(["error", f"its answer could not be sent ({describe(exc)})"]).encode()
    with contextlib.suppress(Exception):
        conn.send_bytes(data)
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    kill_descendants(os.getpid())
    os._exit(0)


class CallWatch:
    """Which call into the system a child is in, since when and with what timeout, in shared memory: the child's
    ``harness.replay._observed.WATCH`` hook writes it, the parent's watchdog reads it."""

    def __init__(self) -> None:
        ctx = mp.get_context()
        self.started = ctx.RawArray("d", 2)  # [monotonic start of the call in progress (0: none), its timeout]
        self.step = ctx.RawValue("i", -1)
        self.call = ctx.RawArray("c", _NAME_BYTES)

    def install(self, step: Callable[[], int] | None = None) -> None:
        """In the child: report every call into the system (and, with ``step``, the step it belongs to)."""
        from harness.replay import _observed

        def watch(name: str | None, seconds: float) -> None:
            if name is None:
                self.started[0] = 0.0
                return
            self.call.value = name.encode("utf-8", "replace")[:_NAME_BYTES - 1]
            if step is not None:
                self.step.value = step()
            self.started[1] = seconds
            self.started[0] = time.monotonic()

        _observed.WATCH = watch

    def reset(self) -> None:
        self.step.value, self.call.value, self.started[0] = -1, b"", 0.0

    def overdue(self, grace: float) -> bool:
        """The call in progress has outlived its timeout by ``grace`` seconds (its timeout was on)."""
        began, limit = float(self.started[0]), float(self.started[1])
        return began > 0 and limit > 0 and time.monotonic() - began > limit + grace

    @property
    def timeout(self) -> float:
        return float(self.started[1])

    def calling(self) -> str:
        """The call in progress (``recall``), or empty between calls."""
        name = self.call.value.decode("utf-8", "replace")
        return name if name and self.started[0] > 0 else ""


class ChildGone(Exception):
    """The child ended, was killed or answered no JSON before its answer: ``str()`` says how, in words."""


def ask(target: Callable[..., None], args: tuple[Any, ...], *, name: str, timeout: float | None = None,
        watch: CallWatch | None = None, grace: float = 0.0) -> Any:
    """Start ``target(conn, *args, tmp)`` in a child and return the JSON value it sends (``leave``). Raises
    ``ChildGone`` when the child ends without answering, outlives ``timeout`` seconds, or, with ``watch``, a call of
    its outlives its own timeout by ``grace``: the child is killed then. Its temporary directory is removed."""
    ctx = mp.get_context()
    tmp = tempfile.mkdtemp(prefix=f"{name}-")
    ours, theirs = ctx.Pipe(duplex=False)
    process = ctx.Process(target=target, args=(theirs, *args, tmp), daemon=True, name=name)
    t0 = time.monotonic()
    answered = False
    try:
        process.start()
        theirs.close()
        while True:
            gone = not process.is_alive()  # waitpid: a grandchild holding the pipe open does not keep this waiting
            if ours.poll(0 if gone else 0.25):
                try:
                    answer = json.loads(ours.recv_bytes().decode("utf-8", "surrogatepass"))
                    answered = True
                    return answer
                except (EOFError, OSError):
                    process.join(5.0)
                    raise ChildGone(f"ended its process ({exit_text(process.exitcode)})") from None
                except (ValueError, RecursionError):
                    raise ChildGone("answered something that is not JSON") from None
            if gone:
                raise ChildGone(f"ended its process ({exit_text(process.exitcode)})")
            if timeout is not None and time.monotonic() - t0 > timeout:
                raise ChildGone(f"did not finish within {timeout:g} s: its process was killed")
            if watch is not None and watch.overdue(grace):
                raise ChildGone(f"did not return within its timeout ({watch.timeout:g} s) and could not be "
                                "interrupted: its process was killed")
    finally:
        ours.close()
        if process.pid is not None:
            process.join(5.0 if answered else 0)  # it leaves at once after answering (its stderr flushed)
            kill_group(process)
        shutil.rmtree(tmp, ignore_errors=True)
