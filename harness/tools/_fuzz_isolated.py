"""``memharness fuzz --system module:factory`` (and ``run --fuzz-examples``) for a plug-in system: each property
runs in a child process the harness can kill (issue 33).

In the harness's own process a plug-in's ``os._exit(0)`` in ``recall()`` ended ``memharness fuzz`` with exit 0 and
no output — a green build. Here the property suite's examples replay in a child that reports each call into the
system as it starts (shared memory, as ``harness/replay/_isolated.py`` does for scenarios); a child that ends, or
whose call outlives its timeout by ``KILL_GRACE_S``, fails that property with the system's failure (naming the call)
and the next property runs in a new child. The example that did it is lost with the process: no regression
scenario is written for it.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing as mp
import os
import signal
import sys
import time
from dataclasses import asdict
from multiprocessing.connection import Connection
from typing import Any, Final

from harness.errors import SYSTEM_FAILED
from harness.tools._fuzz import PropertyOutcome
from harness.tools._properties import Thresholds

_NAME_BYTES: Final = 64


def run_property_isolated(name: str, description: str, *, system: str, thresholds: Thresholds,
                          **options: Any) -> PropertyOutcome:
    """``run_property`` of the property ``name`` against ``system``, in a child process."""
    from harness.replay._isolated import KILL_GRACE_S, _exit_text

    ctx = mp.get_context()
    started = ctx.RawArray("d", 2)  # [monotonic start of the call in progress (0: none), its timeout]
    call = ctx.RawArray("c", _NAME_BYTES)
    ours, theirs = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_main, args=(theirs, system, name, thresholds, options, started, call), daemon=True,
                          name="memharness-fuzz")
    t0 = time.monotonic()
    process.start()
    theirs.close()
    why = ""
    try:
        while True:
            if ours.poll(0.25):
                try:
                    kind, payload = json.loads(ours.recv_bytes().decode("utf-8", "surrogatepass"))
                except (EOFError, OSError):
                    process.join(5.0)
                    why = f"the process running it ended abruptly ({_exit_text(process.exitcode)}){_where(started, call)}"
                    break
                except (ValueError, TypeError, RecursionError):
                    why = "the process running it answered something that is not its outcome"
                    break
                if kind == "ok":
                    return PropertyOutcome(**payload)
                why = f"it could not run in its process ({payload})"
                break
            began, limit = float(started[0]), float(started[1])
            if began > 0 and limit > 0 and time.monotonic() - began > limit + KILL_GRACE_S:
                why = (f"{_where(started, call).removeprefix(', in ')} did not return within its timeout ({limit:g} s) "
                       f"and could not be interrupted: its process was killed")
                break
    finally:
        ours.close()
        if process.is_alive():
            process.kill()
        process.join()
    return PropertyOutcome(name, description, passed=False, examples=0, seconds=time.monotonic() - t0,
                           failure=f"{SYSTEM_FAILED}: {why}; the example is lost with the process (no regression "
                                   "scenario)")


def _where(started: Any, call: Any) -> str:
    name = call.value.decode("utf-8", "replace")
    return f", in {name}()" if name and float(started[0]) > 0 else ""


def _main(conn: Connection, system: str, name: str, thresholds: Thresholds, options: dict[str, Any], started: Any,
          call: Any) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it stops this process
    os.dup2(2, 1)  # the system's raw writes to file descriptor 1 and its print()s go to stderr, never into the
    sys.stdout = sys.stderr  # harness's stdout
    from harness.replay import _observed, load_factory
    from harness.tools._fuzz import run_property
    from harness.tools._properties import default_properties

    def watch(what: str | None, seconds: float) -> None:
        if what is None:
            started[0] = 0.0
            return
        call.value = what.encode("utf-8", "replace")[:_NAME_BYTES - 1]
        started[1] = seconds
        started[0] = time.monotonic()

    _observed.WATCH = watch
    try:
        prop = next(p for p in default_properties(thresholds) if p.name == name)
        message: list[Any] = ["ok", asdict(run_property(prop, factory=load_factory(system), **options))]
    except BaseException as exc:  # the harness's code failed here, or the system broke it in this process
        message = ["error", _observed.describe(exc)]
    with contextlib.suppress(Exception):
        conn.send_bytes(json.dumps(message).encode("utf-8", "replace"))
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    os._exit(0)
