"""Replays of a system the harness did not ship run in child processes the harness can kill (issue 33).

In the harness's own process a plug-in system could end the run: ``os._exit(0)`` left no output and exit code 0 (a
green CI build), a call that ignores or swallows the per-operation timeout (``SIGALRM`` set to ignore, ``except
BaseException`` around a sleep) hung it for ever. Here each scenario of a ``--system module:factory`` replays in a
child; the child reports each call into the system as it starts (its step and timeout, in shared memory), and the
parent kills a child whose call outlives its timeout by ``KILL_GRACE_S``. A child that dies or is killed fails that
scenario — the system's failure, naming the step and call — and a new child replays the rest. Raw writes to file
descriptor 1 land on stderr (the harness's stdout stays its own), and each child's temporary directories are
removed after it, however it ended. The shipped systems replay in-process as before.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import multiprocessing as mp
import os
import shutil
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from multiprocessing.connection import Connection, wait
from typing import TYPE_CHECKING, Any, Final

from harness.errors import SYSTEM_FAILED, HarnessError, SystemFailure, one_line
from harness.replay import _observed
from harness.replay._child import CallWatch, enter_child, exit_text, kill_descendants, kill_group, leave
from harness.replay._observed import describe

if TYPE_CHECKING:
    from harness.replay._records import ScenarioResult
    from harness.replay._suite import RunConfig
    from harness.scenario import Scenario

Output = tuple[list["ScenarioResult"], list[dict[str, Any]]]
KILL_GRACE_S: Final = 10.0
"""How long past its own timeout a call may run (time to raise, unwind and report) before its process is killed."""
MAX_IDLE_DEATHS: Final = 3
"""Children in a row that may end between scenarios (no scenario to blame) before the scenarios left fail."""
FLUSH_TIMEOUT_S: Final = 30.0
"""How long a child may take to flush its exporters and say goodbye when the run is done with it."""


class _Child:
    """One child process replaying one scenario at a time, with its watchdog state in shared memory."""

    def __init__(self, config: RunConfig) -> None:
        ctx = mp.get_context()
        self.watch = CallWatch()
        self.tmp = tempfile.mkdtemp(prefix="memharness-isolated-")
        self.conn, theirs = ctx.Pipe()
        self.process = ctx.Process(target=_main, daemon=True, name="memharness-isolated",
                                   args=(theirs, self.conn, config, self.watch, self.tmp))
        try:
            self.process.start()
        except BaseException:
            self.conn.close()
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise
        finally:
            theirs.close()
        self.job: tuple[int, Scenario, float, float] | None = None  # (index, scenario, handed over at, budget s)
        self.leaving = False

    def overdue(self) -> bool:
        """The call in progress has outlived its timeout by ``KILL_GRACE_S`` (its timeout was on)."""
        return self.watch.overdue(KILL_GRACE_S)

    def out_of_time(self) -> bool:
        """The scenario in progress has run past its budget (``_budget``) whatever it was doing: a hang outside any
        call into the system (harness code the system patched in this process, say)."""
        return self.job is not None and self.job[3] > 0 and time.monotonic() - self.job[2] > self.job[3]

    def where(self) -> str:
        call, step = self.watch.calling(), self.watch.step.value
        at = f"step {step}" if step >= 0 else "before step 0"
        return f"{at}, in {call}()" if call else f"{at}, between calls into the system"

    def ask_to_leave(self) -> None:
        """Tell the child to flush its exporters and leave, without waiting: ``stop`` then waits. Asking every child
        first lets them flush at once (round 17: stopped one by one, a black-holed OTLP endpoint delayed a
        ``--jobs 2`` run by its timeout per child, beyond the documented timeout per system)."""
        if not self.leaving:
            self.leaving = True
            with contextlib.suppress(OSError, EOFError, ValueError):
                self.conn.send(None)  # leave: flush exporters, shut the worker down

    def stop(self, *, kill: bool = False) -> None:
        with contextlib.suppress(OSError, EOFError):
            if not kill:
                self.ask_to_leave()
                if self.conn.poll(FLUSH_TIMEOUT_S):
                    kind, said = _receive(self.conn)
                    left, fds = said if kind == "left" else ([], 0)
                    if left:
                        print(f"note: {len(left)} thread(s) the system under test started were still running when its "
                              f"replay process ended ({', '.join(map(str, left[:3]))}{', …' if len(left) > 3 else ''}):"
                              " it was stopped without waiting for them", file=sys.stderr)
                    if fds:
                        print(f"note: {fds} more file descriptor(s) were open when the system under test's replay "
                              "process ended than when it started (left open by the system?): closed with the process",
                              file=sys.stderr)
        self.conn.close()
        if not kill:
            self.process.join(5.0)
        kill_group(self.process)  # and whatever the system forked and left running
        shutil.rmtree(self.tmp, ignore_errors=True)


def run_isolated(scenarios: Sequence[Scenario], config: RunConfig, jobs: int) -> Iterator[tuple[int, Output]]:
    """(index, (results, spans)) of each scenario as it finishes, in up to ``jobs`` children."""
    pending = deque(enumerate(scenarios))
    children: list[_Child] = []
    died_idle = 0  # children in a row that ended between scenarios
    try:
        while pending or any(c.job for c in children):
            idle = sum(c.job is None for c in children)
            while idle < len(pending) and len(children) < max(1, jobs):  # no more children than work for them
                children.append(_Child(config))
                idle += 1
            for child in list(children):
                if child.job is None and not child.process.is_alive():  # it died between scenarios (a thread
                    said = _receive(child.conn)[1] if child.conn.poll(0) else None  # the system left behind?): no
                    child.stop(kill=True)  # scenario of its is to blame; a new one
                    children.remove(child)
                    died_idle += 1
                    if died_idle >= MAX_IDLE_DEATHS:  # never a loop: the scenarios left fail, saying why
                        why = (f"{SYSTEM_FAILED}: {died_idle} processes in a row that were to replay it ended before "
                               f"their scenario began (the last: {exit_text(child.process.exitcode)}"
                               f"{f'; {said}' if isinstance(said, str) else ''})")
                        while pending:
                            index, scenario = pending.popleft()
                            yield index, (_failed(scenario, config, why, 0.0), [])
                    continue
                if child.job is None and pending:
                    index, scenario = pending.popleft()
                    child.job = (index, scenario, time.monotonic(), _budget(scenario, config))
                    child.watch.reset()
                    with contextlib.suppress(OSError):  # it died already: its sentinel says so below
                        child.conn.send(scenario)
            busy = [c for c in children if c.job is not None]
            ready = wait([c.conn for c in busy] + [c.process.sentinel for c in busy], timeout=0.25)
            for child in busy:
                assert child.job is not None
                index, scenario, since, budget = child.job
                alive = child.process.is_alive()  # waitpid: a grandchild holding the pipes does not hide its end
                if child.conn in ready or (not alive and child.conn.poll(0)):
                    kind, payload = _receive(child.conn)
                    if kind == "ok":
                        child.job, died_idle = None, 0
                        yield index, payload
                        continue
                    if kind in ("error", "unreadable"):  # the replay itself failed in a process the system's code
                        # ran in (it may have patched what the harness uses there), or its answer was not what
                        # the harness sends: that scenario fails, a fresh child goes on
                        child.stop(kill=True)
                        children.remove(child)
                        why = f"{SYSTEM_FAILED}: the replay failed in the process the system ran in ({payload})"
                        yield index, (_failed(scenario, config, why, time.monotonic() - since), [])
                        continue
                    if kind == "harness":  # the harness's own error (no model for the model strategy, say): the
                        child.job = None  # scenario could not run, as it would in-process; not the system's failure
                        yield index, (_failed(scenario, config, payload, time.monotonic() - since, error=True), [])
                        continue
                    if kind == "unsendable":
                        child.job = None
                        yield index, (_failed(scenario, config, payload, time.monotonic() - since), [])
                        continue
                elif child.process.sentinel not in ready and alive and not child.overdue() and not child.out_of_time():
                    continue
                overdue, spent = child.overdue(), child.out_of_time()
                where = child.where()
                child.stop(kill=True)
                children.remove(child)
                code = child.process.exitcode
                why = (f"{where} did not return within its timeout ({child.watch.timeout:g} s) and could not be "
                       f"interrupted: its process was killed after {KILL_GRACE_S:g} s more") if overdue else \
                    (f"the scenario did not finish within {budget:g} s (the per-operation timeout for each of its "
                     f"seeds and steps, and ten more), last {where}: its process was killed") if spent else \
                    (f"the process replaying it ended abruptly ({exit_text(code)}) {where}")
                yield index, (_failed(scenario, config, f"{SYSTEM_FAILED}: {why}", time.monotonic() - since), [])
    finally:
        for child in children:  # every idle child flushes at once; then each is waited for
            if child.job is None:
                child.ask_to_leave()
        for child in children:
            child.stop(kill=child.job is not None)


def _budget(scenario: Scenario, config: RunConfig) -> float:
    """Seconds a whole scenario may take in a child (0: no limit, the per-operation timeout is off): the
    per-operation timeout for each strategy's seeds and steps, ten calls more, and the kill grace."""
    from harness.replay._observed import op_timeout
    from harness.replay._plan import strategies_for

    each = op_timeout(config.model)  # as the child reads it: $MEMHARNESS_OP_TIMEOUT, the model's timeout scale
    calls = (len(scenario.memories) + len(scenario.steps) + 10) * max(1, len(strategies_for(scenario, config.strategies)))
    return each * calls + KILL_GRACE_S if each > 0 else 0.0


def _refuse(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON")


def _receive(conn: Connection) -> tuple[str, Any]:
    """(kind, payload) of a child's message: JSON only, results rebuilt with ``from_row`` (a value the system built
    never runs code here); ("died", None) at EOF, ("unreadable", why) for anything else."""
    from harness.replay._records import Probe, ScenarioResult

    try:
        message = json.loads(conn.recv_bytes().decode("utf-8", "surrogatepass"))
    except (EOFError, OSError):
        return "died", None
    except (ValueError, RecursionError) as exc:
        return "unreadable", f"its answer is not JSON: {type(exc).__name__}"
    try:
        kind = message[0]
        if kind == "ok":
            results = [ScenarioResult.from_row(row, tuple(Probe.from_row(p) for p in probes))
                       for row, probes in message[1]]
            return "ok", (results, [s for s in message[2] if isinstance(s, dict)])
        if kind == "left":  # threads still running (names), and how many more descriptors are open than at the start
            return "left", ([str(n) for n in message[1]], max(0, int(message[2])))
        return str(kind), message[1]
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        return "unreadable", f"its answer is not what a replay sends: {type(exc).__name__}"


def _failed(scenario: Scenario, config: RunConfig, message: str, seconds: float, *,
            error: bool = False) -> list[ScenarioResult]:
    """Every strategy of ``scenario`` failed with ``message`` (what the dead process replayed is lost with it), or,
    with ``error``, could not run (the harness's error: the run is INCOMPLETE)."""
    from harness.replay._plan import strategies_for
    from harness.replay._records import ScenarioResult

    return [ScenarioResult(scenario=scenario.id, strategy=s, passed=False, failures=() if error else (message,),
                           error=message if error else None, probes=(), trace_id="",
                           duration_ms=seconds * 1000, description=scenario.description, tags=scenario.tags,
                           path=one_line(str(scenario.path)), system_ms=seconds * 1000)  # the time went to the system
            for s in strategies_for(scenario, config.strategies)]


def _main(conn: Connection, parents_end: Connection, config: RunConfig, watch: CallWatch, tmp: str) -> None:
    parents_end.close()
    enter_child(tmp)
    fds = _open_fds()
    from harness.replay._suite import Worker

    own = _own_code()  # before the system's module is imported: what it may replace here

    try:
        worker = Worker(config)
    except BaseException as exc:  # the plug-in's import or factory failed here: the scenario sent fails with it
        leave(conn, ["error", f"loading the system raised {describe(exc)}"])
    watch.install(lambda: worker.context.step)
    own.append(("harness.replay._observed", _observed, {"WATCH": _observed.WATCH}))  # set after the import: ours too
    try:
        while True:
            try:
                scenario = conn.recv()
            except (EOFError, OSError):
                return
            if scenario is None:
                return
            watch.step.value = -1
            try:
                results, spans = worker.run(scenario)
                if replaced := _restore(own):  # the system replaced harness code here: an error is its doing
                    results = [_blamed(r, replaced) for r in results]
                message: list[Any] = ["ok", [[r.to_row(), [p.to_row() for p in r.probes]] for r in results], spans]
            except BaseException as exc:  # the replay failed here: the parent fails the scenario (or, for the
                ours = not _restore(own) and isinstance(exc, HarnessError) and not isinstance(exc, SystemFailure)
                message = ["harness" if ours else "error", str(exc) if ours else describe(exc)]  # harness's, it errs)
            try:  # plain JSON, never a pickle: unpickling what the system built could run its code in the parent
                data = json.dumps(message, default=_refuse).encode("utf-8", "surrogatepass")
            except Exception as exc:  # a value of the system's that is no JSON: the system's doing
                data = json.dumps(["unsendable", f"{SYSTEM_FAILED}: its results could not be passed back from the "
                                                 f"isolated replay ({describe(exc)})"]).encode()
            try:
                conn.send_bytes(data)
            except OSError:
                return  # the parent is gone
    finally:
        worker.shutdown()  # exporters flushed; then out at once, not waiting for threads the system left running
        left = [t.name for t in threading.enumerate()
                if t is not threading.main_thread() and not t.daemon and t.is_alive()]
        with contextlib.suppress(Exception):
            conn.send_bytes(json.dumps(["left", [str(n) for n in left], _open_fds() - fds]).encode("utf-8", "replace"))
        sys.stdout.flush()
        sys.stderr.flush()
        kill_descendants(os.getpid())  # what the system forked, also out of its process group (os.setsid)
        os._exit(0)


OwnCode = list[tuple[str, Any, dict[str, Any]]]
_GONE: Final = object()


def _own_code() -> OwnCode:
    """(name, module, its functions and classes) of every harness and memory_core module loaded, and ``builtins``."""
    names = [n for n in list(sys.modules) if n.split(".")[0] in ("harness", "memory_core", "builtins")]
    return [(n, m, {k: v for k, v in vars(m).items() if callable(v)}) for n in names
            if (m := sys.modules.get(n)) is not None]


def _restore(own: OwnCode) -> list[str]:
    """Put back each function or class of ``own`` that was replaced or removed since; their names.

    Round 14b: a plug-in system that replaced ``harness.errors.one_line`` (or ``builtins.isinstance``) in its process
    made the step that next used it fail as the harness's error (an INCOMPLETE run, exit 2), not as the system's,
    and every later scenario of that process with it."""
    changed = []
    for name, module, functions in own:
        now = vars(module)
        for key, value in functions.items():
            if now.get(key, _GONE) is not value:
                changed.append(f"{name}.{key}")
                setattr(module, key, value)
    return changed


def _blamed(result: ScenarioResult, replaced: list[str]) -> ScenarioResult:
    """``result`` failed as the system's failure, naming what it replaced (and the replay's error, if any). Round 16:
    a run that passed anyway was left passed, though the code that judged it was the system's (docs/system-protocol.md:
    that run fails)."""
    if result.skipped and not result.error:
        return result
    what = ", ".join(replaced[:3]) + (f" and {len(replaced) - 3} more" if len(replaced) > 3 else "")
    then = f"the replay then failed: {result.error_text}" if result.error else \
        "the run was judged with it in place (put back after the run)"
    why = one_line(f"{SYSTEM_FAILED}: it replaced the harness's own {what} in the process replaying it, and {then}")
    return dataclasses.replace(result, passed=False, error=None, failures=(*result.failures, why))


def _open_fds() -> int:
    """How many file descriptors this process has open (0 where ``/proc`` cannot say)."""
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 0
