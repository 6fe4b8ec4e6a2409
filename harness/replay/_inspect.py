"""What a plug-in system declares, read in a child process the harness can kill (issue 33).

``memharness run`` reads the factory's ``model_proxy`` before replaying, and ``memharness conformance`` builds one
instance to read its name, design, strategies, capabilities and methods. Doing either in the harness's own process
runs the plug-in's import-time code there: an ``os._exit(0)`` at import ended the run with exit 0 and no output, an
import that blocks hung it. Here a child imports the module, checks the factory and (for conformance) builds one
instance, and answers in JSON; an import that raises, exits, is killed or outlives ``INSPECT_TIMEOUT_S`` is one
located error (exit 2), and the harness's own process never imports the plug-in at all.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing as mp
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Final

from harness.errors import SYSTEM_FAILED, HarnessError, SystemFailure

INSPECT_TIMEOUT_S: Final = 120.0
"""How long importing a plug-in system's module, checking its factory and building one instance may take."""


@dataclass(frozen=True)
class Traits:
    """What a system's factory (and, when asked, one instance of it) declares."""

    model_proxy: bool
    name: str = ""
    design: str = ""
    strategies: tuple[str, ...] | None = None
    capabilities: frozenset[str] = frozenset()
    methods: frozenset[str] = frozenset()
    """Of the methods asked about, those the instance has (callable)."""


def plugin_traits(spec: str, *, methods: Sequence[str] = (), instance: bool = False,
                  timeout: float | None = None) -> Traits:
    """``spec``'s traits, read in a child process. Raises ``HarnessError`` (the module cannot be imported, its factory
    is no factory, the child ended or was killed) or ``SystemFailure`` (building or reading the instance failed)."""
    from harness.replay._isolated import _exit_text

    timeout = INSPECT_TIMEOUT_S if timeout is None else timeout
    ctx = mp.get_context()
    tmp = tempfile.mkdtemp(prefix="memharness-inspect-")
    ours, theirs = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_main, args=(theirs, spec, tuple(methods), instance, tmp), daemon=True,
                          name="memharness-inspect")
    what = "importing its module" + (", building one instance and reading what it declares" if instance else "")
    try:
        process.start()
        theirs.close()
        if not ours.poll(timeout):
            process.kill()
            raise HarnessError(f"--system {spec}: {what} did not finish within {timeout:g} s: its process was killed")
        try:
            answer = json.loads(ours.recv_bytes().decode("utf-8", "surrogatepass"))
        except (EOFError, OSError):
            process.join(5.0)
            raise HarnessError(f"--system {spec}: {what} ended its process ({_exit_text(process.exitcode)}) before it "
                               "answered") from None
        except (ValueError, RecursionError):  # the process's own answer is JSON; a system that wrote into the pipe
            raise HarnessError(f"--system {spec}: {what} did not answer in JSON") from None
    finally:
        ours.close()
        if process.pid is not None:
            process.join(5.0)
            if process.is_alive():
                process.kill()
                process.join()
        shutil.rmtree(tmp, ignore_errors=True)
    return _answer(spec, answer)


def _answer(spec: str, answer: Any) -> Traits:
    try:
        kind, value = answer
        if kind == "usage":
            raise HarnessError(str(value))
        if kind == "failed":
            raise SystemFailure(f"{SYSTEM_FAILED}: --system {spec}: {value}")
        if kind == "ok":
            return Traits(bool(value["model_proxy"]), str(value["name"]), str(value["design"]),
                          None if value["strategies"] is None else tuple(map(str, value["strategies"])),
                          frozenset(map(str, value["capabilities"])), frozenset(map(str, value["methods"])))
    except (TypeError, ValueError, KeyError) as exc:
        raise HarnessError(f"--system {spec}: the process that read it answered {type(exc).__name__}") from None
    raise HarnessError(f"--system {spec}: the process that read it answered {str(kind)[:40]!r}")


def _main(conn: Connection, spec: str, methods: tuple[str, ...], instance: bool, tmp: str) -> None:  # noqa: FBT001
    from harness.replay._observed import describe

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it stops this process
    os.dup2(2, 1)  # what the module prints goes to stderr, never into the harness's stdout: its raw writes to file
    sys.stdout = sys.stderr  # descriptor 1 and its print()s, whatever sys.stdout was (a library caller's, a test's)
    os.environ["TMPDIR"] = tempfile.tempdir = tmp  # removed by the parent however this process ends
    answer: list[Any]
    try:
        answer = ["ok", _read(spec, methods, Path(tmp), instance=instance)]
        data = json.dumps(answer).encode("utf-8", "surrogatepass")
    except HarnessError as exc:
        data = json.dumps(["usage", str(exc)]).encode("utf-8", "replace")
    except _Failed as exc:
        data = json.dumps(["failed", str(exc)]).encode("utf-8", "replace")
    except BaseException as exc:  # its import raised SystemExit, or its answer is no JSON
        data = json.dumps(["failed", f"loading it raised {describe(exc)}"]).encode("utf-8", "replace")
    with contextlib.suppress(OSError):
        conn.send_bytes(data)
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(0)


def _read(spec: str, methods: tuple[str, ...], tmp: Path, *, instance: bool) -> dict[str, Any]:
    from harness.replay._factory import load_factory

    factory = load_factory(spec)
    try:
        proxy = bool(getattr(factory, "model_proxy", False))
    except BaseException as exc:
        raise _Failed(f"reading its factory's model_proxy raised {_describe(exc)}") from None
    out: dict[str, Any] = {"model_proxy": proxy, "name": "", "design": "", "strategies": None, "capabilities": [],
                           "methods": []}
    if not instance:
        return out
    from datetime import UTC, datetime

    from memory_core.clock import FixedClock
    from memory_core.events import NullSink

    (tmp / "workdir").mkdir()
    try:
        system = factory(tmp / "workdir", FixedClock(datetime(2026, 1, 1, tzinfo=UTC)), None, NullSink())
    except HarnessError:
        raise
    except BaseException as exc:
        raise _Failed(f"building one instance raised {_describe(exc)}") from None
    try:
        strategies = getattr(system, "strategies", None)
        out.update(name=str(getattr(system, "name", "")), design=str(getattr(system, "design", "")),
                   strategies=None if strategies is None else sorted(str(s) for s in strategies),
                   capabilities=sorted(str(c) for c in getattr(system, "capabilities", frozenset())),
                   methods=[m for m in methods if callable(getattr(system, m, None))])
    except BaseException as exc:
        raise _Failed(f"reading what one instance declares raised {_describe(exc)}") from None
    finally:
        with contextlib.suppress(BaseException):  # what it declares is read; its replays exercise close() again
            close = getattr(system, "close", None)
            if callable(close):
                close()
    return out


class _Failed(Exception):
    def __str__(self) -> str:
        return str(self.args[0])


def _describe(exc: BaseException) -> str:
    from harness.replay._observed import describe

    return describe(exc)
