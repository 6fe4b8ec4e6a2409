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

import time
from dataclasses import asdict
from multiprocessing.connection import Connection
from typing import Any

from harness.errors import SYSTEM_FAILED
from harness.replay._child import CallWatch, ChildGone, ask, enter_child, leave
from harness.tools._fuzz import PropertyOutcome
from harness.tools._properties import Thresholds


def run_property_isolated(name: str, description: str, *, system: str, thresholds: Thresholds,
                          **options: Any) -> PropertyOutcome:
    """``run_property`` of the property ``name`` against ``system``, in a child process."""
    from harness.replay._isolated import KILL_GRACE_S

    watch = CallWatch()
    t0 = time.monotonic()
    try:
        kind, payload = ask(_main, (system, name, thresholds, options, watch), name="memharness-fuzz", watch=watch,
                            grace=KILL_GRACE_S)
        if kind == "ok":
            return PropertyOutcome(**payload)
        why = f"it could not run in its process ({payload})"
    except ChildGone as exc:
        why = (f"{watch.calling()}() " if watch.calling() else "running it ") + str(exc)
    except (TypeError, ValueError):
        why = "the process running it answered something that is not its outcome"
    return PropertyOutcome(name, description, passed=False, examples=0, seconds=time.monotonic() - t0,
                           failure=f"{SYSTEM_FAILED}: {why}; the example is lost with the process (no regression "
                                   "scenario)")


def _main(conn: Connection, system: str, name: str, thresholds: Thresholds, options: dict[str, Any],
          watch: CallWatch, tmp: str) -> None:
    enter_child(tmp)
    from harness.replay import load_factory
    from harness.replay._observed import describe
    from harness.tools._fuzz import run_property
    from harness.tools._properties import default_properties

    watch.install()
    try:
        prop = next(p for p in default_properties(thresholds) if p.name == name)
        outcome = asdict(run_property(prop, factory=load_factory(system), **options))
    except BaseException as exc:  # the harness's code failed here, or the system broke it in this process
        leave(conn, ["error", describe(exc)])
    leave(conn, ["ok", outcome])
