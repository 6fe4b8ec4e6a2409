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
import multiprocessing as mp
import os
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Final

from harness.errors import SYSTEM_FAILED, HarnessError, SystemFailure
from harness.replay._child import ChildGone, ask, enter_child, leave
from harness.replay._observed import describe
from harness.replay._proxy import PROXY_URL_ENV, ModelProxy

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
    what = "importing its module" + (", building one instance and reading what it declares" if instance else "")
    stage = mp.get_context().RawValue("i", 0)  # 1 once the module is imported: what failed after is the system's
    try:
        answer = ask(_main, (spec, tuple(methods), instance, stage), name="memharness-inspect",
                     timeout=INSPECT_TIMEOUT_S if timeout is None else timeout)
    except ChildGone as exc:
        if stage.value:
            raise SystemFailure(f"{SYSTEM_FAILED}: --system {spec}: its factory or instance, read after its import, "
                                f"{exc}") from None
        raise HarnessError(f"--system {spec}: {what} {exc}") from None
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


def _main(conn: Connection, spec: str, methods: tuple[str, ...], instance: bool, stage: Any,  # noqa: FBT001
          tmp: str) -> None:
    enter_child(tmp)
    try:
        leave(conn, ["ok", _read(spec, methods, Path(tmp), stage, instance=instance)])
    except HarnessError as exc:
        leave(conn, ["usage", str(exc)])
    except _Failed as exc:
        leave(conn, ["failed", str(exc)])
    except BaseException as exc:  # its import raised SystemExit (a usage error, as any import that fails), or
        if not stage.value:  # what came after the import did (the system's failure)
            leave(conn, ["usage", f"--system {spec}: cannot import (it raised {describe(exc)})"])
        leave(conn, ["failed", f"loading it raised {describe(exc)}"])


def _read(spec: str, methods: tuple[str, ...], tmp: Path, stage: Any, *, instance: bool) -> dict[str, Any]:
    from harness.replay._factory import load_factory

    factory = load_factory(spec)
    stage.value = 1
    try:
        proxy = bool(getattr(factory, "model_proxy", False))
    except BaseException as exc:
        raise _Failed(f"reading its factory's model_proxy raised {describe(exc)}") from None
    out: dict[str, Any] = {"model_proxy": proxy, "name": "", "design": "", "strategies": None, "capabilities": [],
                           "methods": []}
    if not instance:
        return out
    from datetime import UTC, datetime

    from memory_core.clock import FixedClock
    from memory_core.events import NullSink

    (tmp / "workdir").mkdir()
    if proxy and not os.environ.get(PROXY_URL_ENV):  # a factory reads the proxy's URL: one that has nothing recorded
        (tmp / "proxy").mkdir()
        empty = ModelProxy(tmp / "proxy", "replay")  # a model call while it is built is a 404; the child ends here
        empty.start()
        os.environ[PROXY_URL_ENV] = empty.base_url
    try:
        system = factory(tmp / "workdir", FixedClock(datetime(2026, 1, 1, tzinfo=UTC)), None, NullSink())
    except HarnessError:
        raise
    except BaseException as exc:
        raise _Failed(f"building one instance raised {describe(exc)}") from None
    try:  # read as a replay reads them (round 13: a name of 5 was shown as "5" here, and as no name in the run)
        from harness.system import declared_strategies, system_design, system_name

        strategies = declared_strategies(system)
        declared: Any = getattr(system, "capabilities", frozenset())
        if isinstance(declared, (str, bytes)) or not hasattr(declared, "__iter__"):
            raise _Failed(f"its capabilities is {type(declared).__name__} {str(declared)[:40]!r}, expected a set of "
                          "names")
        out.update(name=system_name(system), design=system_design(system),
                   strategies=None if strategies is None else sorted(strategies),
                   capabilities=sorted(str(c) for c in declared),
                   methods=[m for m in methods if callable(getattr(system, m, None))])
    except SystemFailure as exc:
        raise _Failed(str(exc).removeprefix(f"{SYSTEM_FAILED}: ")) from None
    except _Failed:
        raise
    except BaseException as exc:
        raise _Failed(f"reading what one instance declares raised {describe(exc)}") from None
    finally:
        with contextlib.suppress(BaseException):  # what it declares is read; its replays exercise close() again
            close = getattr(system, "close", None)
            if callable(close):
                close()
    return out


class _Failed(Exception):
    """What the system's own code did wrong while it was read (its message is the whole line)."""
