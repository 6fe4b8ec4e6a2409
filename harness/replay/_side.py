"""The side process of a serial run: forked as the run starts, it waits for the scenarios that need the real
litellm adapter (model faults beneath it), then imports litellm (seconds of pure Python) on the spare core while
this process replays everything else, replays them and sends their results back.

``prestart`` forks it before the scenarios are even loaded (while this process is small); ``run_suite`` hands it
its scenarios (``take``) or stops it when none needs it (``discard``): a run with no model fault never imports
litellm, which holds ~140 MiB. Results, probes and trace order are the same as an in-process replay.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import pickle
import sys
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from harness.errors import HarnessError, child_signals, die_with_parent

if TYPE_CHECKING:
    from harness.replay._records import ScenarioResult
    from harness.replay._suite import RunConfig
    from harness.scenario import Scenario

Output = tuple[list["ScenarioResult"], list[dict[str, Any]]]


def possible() -> bool:
    """A side process helps only with a spare core, ``fork`` as this process's start method (not one a caller chose
    otherwise, nor Python 3.14's forkserver default), and litellm not imported here yet."""
    return "litellm" not in sys.modules and _usable_cores() >= 2 and mp.get_context().get_start_method() == "fork"


def _usable_cores() -> int:
    """Cores this process may run on (its affinity, e.g. ``taskset`` or a container's cpuset), not the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


FLUSH_TIMEOUT_S = 30.0
"""How long the parent waits for the side process to flush its exporters and leave after sending its results."""


class SideProcess:
    """One forked process, one batch of scenarios."""

    def __init__(self) -> None:
        ctx = mp.get_context("fork")
        self.conn, child = ctx.Pipe()
        # the child closes its copy of our end first thing: if this process dies, the child's recv() sees EOF
        self.process = ctx.Process(target=_main, args=(child, self.conn), daemon=True, name="memharness-litellm-side")
        self.process.start()
        child.close()

    def replay(self, config: RunConfig, scenarios: Sequence[Scenario]) -> None:
        """Start replaying ``scenarios`` (every strategy of the run for each) over there."""
        try:
            self.conn.send((config, list(scenarios)))
        except OSError:
            self.close()
            raise self._died() from None

    def outputs(self) -> list[Output]:
        """Each scenario's (results, spans), in the order given; re-raises what the side process raised."""
        try:
            kind, payload = self.conn.recv()
        except (EOFError, OSError):
            self.close()
            raise self._died() from None
        except Exception as exc:  # an exception of the child's that does not unpickle here
            self.close()
            raise HarnessError(f"the side process failed and its error could not be read back ({exc})") from None
        self.process.join(FLUSH_TIMEOUT_S)  # it flushes its exporters (OTLP, console) and leaves: let it
        self.close()
        if kind == "error":
            raise payload
        return payload  # type: ignore[no-any-return]

    def _died(self) -> HarnessError:
        return HarnessError(f"the side process replaying the litellm scenarios died (exit code {self.process.exitcode})")

    def close(self) -> None:
        """Stop the process (mid-import when it was not needed) and reap it; idempotent. SIGKILL, not SIGTERM: just
        after the fork the child still has this process's SIGTERM handler, which only notes the request, so a
        run that ended at once (a path with no scenario) waited 3-4 s for litellm's import to finish over there."""
        self.conn.close()
        if self.process.is_alive():
            self.process.kill()
        self.process.join()


def _main(conn: Connection, parents_end: Connection) -> None:
    parents_end.close()
    # Ctrl-C is the parent's to handle (it stops this process): no second traceback from here
    child_signals()
    die_with_parent()  # a SIGKILLed run leaves no side process behind
    try:
        config, scenarios = conn.recv()
    except (EOFError, OSError):  # the run did not need it, or the parent is gone
        return
    # imported only now that the run needs it: litellm takes ~140 MiB, which a run with no model fault never
    # needed (this process reached 170-230 MiB by the time a large suite was loaded: the run's peak memory)
    try:
        from memory_core.litellm_model import _litellm

        _litellm()  # the import this process exists for, while the parent replays the rest
    except BaseException as exc:
        _send(conn, ("error", HarnessError(f"cannot import litellm for the model-fault scenarios: "
                                           f"{type(exc).__name__}: {exc}")))
        return
    from harness.replay._suite import Worker

    worker = Worker(config)
    try:
        outputs = [worker.run(s) for s in scenarios]
    except BaseException as exc:  # handed to the parent, which raises it
        _send(conn, ("error", exc if _round_trips(exc) else HarnessError(f"{type(exc).__name__}: {exc}")))
    else:
        _send(conn, ("ok", outputs))
    finally:
        worker.shutdown()  # flush OTLP exporters before the forked process leaves through os._exit


def _round_trips(exc: BaseException) -> bool:
    """Whether an exception survives pickling (to be sent from a child process to its parent as it is)."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return False
    return True


def _send(conn: Connection, message: tuple[str, Any]) -> None:
    with contextlib.suppress(OSError):  # the parent is gone: nobody to tell
        conn.send(message)


_PRESTARTED: SideProcess | None = None


def prestart() -> None:
    """Fork the side process now, so litellm's import overlaps loading the scenarios too (``memharness run``)."""
    global _PRESTARTED
    if _PRESTARTED is None and possible():
        _PRESTARTED = SideProcess()


def take() -> SideProcess:
    """The prestarted side process, else a new one."""
    global _PRESTARTED
    side, _PRESTARTED = _PRESTARTED, None
    return side or SideProcess()


def discard() -> None:
    """Stop a prestarted side process the run turned out not to need."""
    global _PRESTARTED
    if _PRESTARTED is not None:
        side, _PRESTARTED = _PRESTARTED, None
        side.close()
