"""Round 14b (blind, generated): hostile plug-in systems in new ways.

1. A read the harness makes of the system (``index_text()``, ``loaded_index()``, ``stray_files()``, ``lock_held()``,
   ``system_check()``) answering another type — a list, a list holding itself, a generator, a number, bytes, a
   ``str`` subclass whose methods raise — crashed the check step with ``AttributeError`` (an INCOMPLETE run, exit 2,
   blamed on the harness). Now it is the system's failure naming the call (``_observed._checked_read``).
2. A system that replaced harness functions (or builtins) in the process replaying it made the next step fail as the
   harness's error (INCOMPLETE, exit 2). Now the replay puts them back after each scenario and the failure is the
   system's, naming what it replaced (``_isolated._restore``).
3. A process the system forked and moved out of the child's process group (``os.setsid()``, or orphaned first)
   outlived the run (``kill_group`` kills the group only; it slept on, holding the run's pipes). Now the child is a
   subreaper and its descendants are killed with it (``_child.kill_descendants``).

Generated: Hypothesis picks the read, the value, and which harness functions are replaced with what."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.errors import SYSTEM_FAILED
from harness.system import reference_factory
from tests.harness.conftest import SCENARIOS

HOSTILE_SCENARIO = SCENARIOS / "recall" / "multi-fact.yaml"  # recalls (the reference reads its index) and checks
CLEAN_SCENARIO = SCENARIOS / "forget" / "one-entry-of-many.yaml"
OUTPUTS = ("summary.json", "summary.md", "results.jsonl", "probes.jsonl", "traces.jsonl", "junit.xml", "report.html")
PLAN: dict[str, Any] = {}
"""What the hostile system does: {"read": name, "value": factory of the answer} or {"patch": [(module, name, value)]}."""


class _RaisingStr(str):
    __slots__ = ()

    def __str__(self) -> str:
        raise RuntimeError("its __str__ raises")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("its __eq__ raises")

    def __hash__(self) -> int:
        raise RuntimeError("its __hash__ raises")

    def __contains__(self, other: object) -> bool:
        raise RuntimeError("its __contains__ raises")


def _self_list() -> list[Any]:
    items: list[Any] = []
    items.append(items)
    return items


WRONG: dict[str, Callable[[], Any]] = {
    "list": lambda: ["MEMORY.md"], "self-list": _self_list, "generator": lambda: (c for c in "abc"),
    "int": lambda: 7, "none": lambda: None, "bytes": lambda: b"index", "dict": lambda: {"a": 1},
    "raising-str": lambda: _RaisingStr("x"), "huge-list": lambda: ["x"] * 20_000}


class _Hostile:
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._inner, name)
        if not callable(real):
            return real

        def call(*args: Any, **kwargs: Any) -> Any:
            if PLAN.get("read") == name:
                return WRONG[PLAN["value"]]()
            result = real(*args, **kwargs)
            if name == "recall" and "patch" in PLAN:  # after the system's own answer: what the harness runs next
                for module, attr, value in PLAN["patch"]:
                    setattr(importlib.import_module(module), attr, value)
            return result
        return call


def factory(workdir: Path, clock: Any, model: Any, events: Any) -> _Hostile:
    return _Hostile(reference_factory(workdir, clock, model, events))


def _run(tmp_path: Path) -> tuple[int, dict[str, dict[str, Any]]]:
    out = tmp_path / f"run-{os.urandom(4).hex()}"
    code = main(["run", str(HOSTILE_SCENARIO), str(CLEAN_SCENARIO), "--system", f"{__name__}:factory", "--no-gates",
                 "--out", str(out)], environ={})
    assert all((out / name).is_file() for name in OUTPUTS)
    lines = (out / "results.jsonl").read_text(encoding="utf-8").split("\n")
    return code, {r["scenario"].rsplit("/", 1)[-1]: r for r in map(json.loads, filter(None, lines))}


@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(read=st.sampled_from(["index_text"]), value=st.sampled_from(sorted(WRONG)))
def test_a_read_answering_another_type_is_the_systems_failure(tmp_path: Path, read: str, value: str) -> None:
    PLAN.clear()
    PLAN.update(read=read, value=value)
    code, results = _run(tmp_path)
    for r in results.values():
        assert not r["error"], r["error"]
    if value == "raising-str":  # text: read as its plain characters, none of its methods runs (a normalisation)
        assert code == 0, results
        return
    assert code == 1, results  # FAILED (the system's), never INCOMPLETE (2)
    failures = [f for r in results.values() for f in r["failures"]]
    assert any(f"{SYSTEM_FAILED}: {read}() returned" in f for f in failures), failures
    assert all("\n" not in f and len(f) < 1200 for f in failures), failures


_TARGETS = {m: sorted(k for k, v in vars(importlib.import_module(m)).items() if callable(v) and not k.startswith("__"))
            for m in ("harness.errors", "harness.replay._checks", "harness.replay._expect", "harness.replay._replay",
                      "harness.replay._records", "harness.replay._observed", "builtins")}
_REPLACEMENTS = st.sampled_from([None, 0, "x", lambda *a, **k: None])
_PATCH = st.sampled_from(sorted(_TARGETS)).flatmap(
    lambda m: st.tuples(st.just(m), st.sampled_from(_TARGETS[m]), _REPLACEMENTS))


@settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(patch=st.lists(_PATCH, min_size=1, max_size=6))
def test_a_system_that_replaces_harness_code_fails_itself_not_the_harness(
        tmp_path: Path, patch: list[tuple[str, str, Any]]) -> None:
    PLAN.clear()
    PLAN.update(patch=patch)
    code, results = _run(tmp_path)
    assert code in (0, 1), results  # never INCOMPLETE: the harness did nothing wrong
    for r in results.values():
        assert not r["error"], r["error"]
        assert all("\n" not in f and len(f) < 1200 for f in r["failures"]), r["failures"]
    assert results["one-entry-of-many"]["passed"], results  # it never recalls: a fresh state, whatever came before


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(b")") + 2:][:1] not in (b"Z", b"X")


def _escape(pids: Path, how: str) -> None:
    """Leave a process behind that is out of the child's process group: ``setsid`` in a forked child, or a
    grandchild orphaned by its parent's exit and then ``setsid``. The call returns once the escaped process has
    written its pid: on a loaded box it might otherwise not have run before the run ended and its cleanup killed
    it (the test then read "the system never forked")."""
    ready, told = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ready)
        if how == "double" and os.fork() != 0:
            os._exit(0)  # the grandchild goes on, orphaned
        os.setsid()
        with pids.open("a") as f:
            f.write(f"{os.getpid()}\n")
        os.write(told, b"x")
        os.close(told)
        threading.Event().wait(60)
        os._exit(0)
    os.close(told)
    if how == "double":
        os.waitpid(pid, 0)
    try:
        os.read(ready, 1)  # the pid is written (or the process died: end of file)
    finally:
        os.close(ready)


class _Escaping(_Hostile):
    def __getattr__(self, name: str) -> Any:
        real = getattr(self._inner, name)
        if name != PLAN.get("escape_in") or not callable(real):
            return real

        def call(*args: Any, **kwargs: Any) -> Any:
            _escape(Path(PLAN["pids"]), PLAN["how"])
            return real(*args, **kwargs)
        return call


def escaping_factory(workdir: Path, clock: Any, model: Any, events: Any) -> _Escaping:
    return _Escaping(reference_factory(workdir, clock, model, events))


@settings(max_examples=4, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(call=st.sampled_from(["seed", "recall", "documents", "index_text"]), how=st.sampled_from(["setsid", "double"]))
def test_a_process_the_system_moves_out_of_its_group_does_not_outlive_the_run(tmp_path: Path, call: str,
                                                                              how: str) -> None:
    pids = tmp_path / f"pids-{os.urandom(4).hex()}"
    pids.touch()
    PLAN.clear()
    PLAN.update(escape_in=call, pids=str(pids), how=how)
    out = tmp_path / f"run-{os.urandom(4).hex()}"
    code = main(["run", str(HOSTILE_SCENARIO), str(CLEAN_SCENARIO), "--system", f"{__name__}:escaping_factory",
                 "--no-gates", "--out", str(out)], environ={})
    assert code in (0, 1)
    assert all((out / name).is_file() for name in OUTPUTS)
    left = [int(p) for p in pids.read_text().split()]
    assert left, "the system never forked"  # the call was made
    deadline = time.monotonic() + 3.0
    while any(map(_alive, left)) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = [p for p in left if _alive(p)]
    for pid in alive:  # never leave them behind, even when the test fails
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    assert not alive, f"{len(alive)} process(es) the system moved out of its group outlived the run"
