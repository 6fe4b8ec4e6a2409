"""A hostile system under test is contained (issue 33): whatever one of its calls does — raise any exception, exit,
hang, answer with the wrong type, print to stdout — the run goes on, every output is written, the scenario that met
it fails with "the system under test failed: <call>() …" at its step, the other scenarios still pass, and the
verdict says FAILED (the system's failure), never INCOMPLETE (the harness's). Generated: Hypothesis picks the
call, the misbehaviour and the value."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.errors import SYSTEM_FAILED
from harness.system import reference_factory
from tests.harness.conftest import SCENARIOS
from tests.helpers import examples

HOSTILE_SCENARIO = SCENARIOS / "recall" / "multi-fact.yaml"  # calls seed, recall, documents
CLEAN_SCENARIO = SCENARIOS / "forget" / "one-entry-of-many.yaml"  # no recall: untouched by a hostile recall
OUTPUTS = ("summary.json", "summary.md", "results.jsonl", "probes.jsonl", "traces.jsonl", "junit.xml", "report.html")
PLAN: dict[str, Any] = {}
"""What the hostile system does: {"call": name, "how": kind, "value": payload}; set by each example."""


class _Hostile:
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._inner, name)
        if name != PLAN.get("call") or not callable(real):
            return real

        def call(*args: Any, **kwargs: Any) -> Any:
            how, value = PLAN["how"], PLAN.get("value")
            if how == "raise":
                raise value
            if how == "exit":
                sys.exit(value)
            if how == "hang":
                threading.Event().wait(3600)
            if how == "wrong":
                return value
            if how == "hang_hard":  # the timeout's signal switched off: only the watchdog's kill ends this
                signal.signal(signal.SIGALRM, signal.SIG_IGN)
                threading.Event().wait(3600)
            if how == "hang_swallow":  # the timeout's exception caught and ignored, for ever
                while True:
                    with contextlib.suppress(BaseException):
                        threading.Event().wait(3600)
            if how == "exit_now":  # no exception, no finally: the process is gone (isolated replays survive it)
                os._exit(value)
            if how == "signal":
                os.kill(os.getpid(), value)
            if how == "field":  # the right result type with one field of the wrong type
                name, bad = value
                result = real(*args, **kwargs)
                return dataclasses.replace(result, **{name: bad})
            if how == "fd1":  # under Python's stdout, straight to file descriptor 1
                os.write(1, value)
                return real(*args, **kwargs)
            print(value)  # "print": then behave
            return real(*args, **kwargs)
        return call


def factory(workdir: Path, clock: Any, model: Any, events: Any) -> _Hostile:
    return _Hostile(reference_factory(workdir, clock, model, events))


EXCEPTIONS = st.sampled_from([RuntimeError, ValueError, TypeError, KeyError, OSError, MemoryError, RecursionError,
                              AssertionError, NotImplementedError, UnicodeError, ZeroDivisionError, StopIteration])
class _Unreadable(Exception):
    def __str__(self) -> str:
        raise ValueError("its __str__ raises")


MISBEHAVIOUR = st.one_of(
    st.tuples(st.just("raise"), st.builds(lambda e, t: e(t), EXCEPTIONS, st.text(max_size=40))),
    st.tuples(st.just("raise"), st.sampled_from([KeyboardInterrupt(), _Unreadable(), RuntimeError("x\n" * 5000),
                                                 SystemExit(0), GeneratorExit()])),
    st.tuples(st.just("exit_now"), st.integers(0, 255)),
    st.tuples(st.just("signal"), st.sampled_from([signal.SIGKILL, signal.SIGTERM, signal.SIGSEGV, signal.SIGABRT])),
    st.tuples(st.just("field"), st.tuples(st.sampled_from(["selected", "strategy", "scores", "details", "error"]),
                                          st.one_of(st.integers(), st.binary(max_size=4), st.just((None, 7)),
                                                    st.lists(st.integers(), min_size=1)))),
    st.tuples(st.just("fd1"), st.binary(min_size=1, max_size=30)),
    st.tuples(st.just("exit"), st.one_of(st.none(), st.integers(-3, 300), st.text(max_size=10))),
    st.tuples(st.just("wrong"), st.one_of(st.none(), st.integers(), st.text(max_size=20), st.lists(st.integers()),
                                          st.dictionaries(st.text(max_size=5), st.integers(), max_size=3))),
    st.tuples(st.just("print"), st.text(max_size=40)),
)


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(call=st.sampled_from(["recall", "seed", "documents"]), misbehaviour=MISBEHAVIOUR)
def test_a_hostile_call_fails_its_scenario_and_the_run_goes_on(tmp_path: Path, call: str,
                                                               misbehaviour: tuple[str, Any]) -> None:
    how, value = misbehaviour
    if how in ("wrong", "field") and call in ("seed", "documents"):  # only operations have a result type to refuse
        how, value = "raise", RuntimeError("x")
    if how == "field" and value[0] == "scores" and isinstance(value[1], list):  # a list of numbers is well-formed
        value = ("scores", ["x"])
    if how == "field" and value[0] == "error" and value[1] == b"":
        value = ("error", 0)
    PLAN.clear()
    PLAN.update(call=call, how=how, value=value)
    out = tmp_path / f"run-{os.urandom(4).hex()}"
    code = main(["run", str(HOSTILE_SCENARIO), str(CLEAN_SCENARIO), "--system", f"{__name__}:factory", "--no-gates",
                 "--out", str(out)], environ={})
    assert all((out / name).is_file() for name in OUTPUTS)
    lines = (out / "results.jsonl").read_text(encoding="utf-8").split("\n")  # not splitlines(): U+0085, U+2028
    results = {r["scenario"].rsplit("/", 1)[-1]: r for r in map(json.loads, filter(None, lines))}
    summary_md = (out / "summary.md").read_text()
    hostile, clean = results["multi-fact"], results["one-entry-of-many"]
    if how in ("print", "fd1"):
        assert hostile["passed"], hostile
        assert clean["passed"], clean
        assert code == 0
        return
    assert code == 1, hostile
    # the scenarios that met the call fail with the system's failure, never the harness's error; one that never
    # made the call (the forget scenario does not recall) still passes
    met = [hostile] if call == "recall" else [hostile, clean]
    for r in met:
        assert not r["passed"]
        assert not r["error"], r["error"]
        assert any(SYSTEM_FAILED in f and f"{call}()" in f for f in r["failures"]), r["failures"]
        assert all("\n" not in f and len(f) < 1200 for f in r["failures"]), r["failures"]  # one line, bounded
    if call == "recall":
        assert clean["passed"], clean
    assert summary_md.startswith("## memharness — FAILED")


def test_a_call_that_hangs_is_cut_at_the_per_operation_timeout(tmp_path: Path) -> None:
    """In a subprocess: the timeout is a SIGALRM, which only the main thread of a process receives."""
    code = (f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})\n"
            "from tests.hostile_cli import test_hostile_systems as t\n"
            "t.PLAN.update(call='recall', how='hang')\n"
            "from harness.cli import main\n"
            f"sys.exit(main(['run', {str(HOSTILE_SCENARIO)!r}, {str(CLEAN_SCENARIO)!r}, '--system', "
            f"'tests.hostile_cli.test_hostile_systems:factory', '--no-gates', '--out', {str(tmp_path / 'out')!r}]))\n")
    env = {**os.environ, "MEMHARNESS_OP_TIMEOUT": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1, done.stderr[-2000:]
    assert f"{SYSTEM_FAILED}: recall() did not return within 1 s" in done.stdout
    assert all((tmp_path / "out" / name).is_file() for name in OUTPUTS)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["hang_hard", "hang_swallow"])
def test_a_call_that_defeats_the_timeout_is_killed_and_the_run_goes_on(tmp_path: Path, how: str) -> None:
    """A plug-in system replays in a child process (harness/replay/_isolated.py): a call that switches the timeout's
    signal off or swallows its exception is killed ``KILL_GRACE_S`` after its timeout; the next scenario replays
    in a new child and passes."""
    from harness.replay._isolated import KILL_GRACE_S

    code = (f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})\n"
            "from tests.hostile_cli import test_hostile_systems as t\n"
            f"t.PLAN.update(call='recall', how={how!r})\n"
            "from harness.cli import main\n"
            f"sys.exit(main(['run', {str(HOSTILE_SCENARIO)!r}, {str(CLEAN_SCENARIO)!r}, '--system', "
            f"'tests.hostile_cli.test_hostile_systems:factory', '--no-gates', '--out', {str(tmp_path / 'out')!r}]))\n")
    env = {**os.environ, "MEMHARNESS_OP_TIMEOUT": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=60 + KILL_GRACE_S, check=False)
    assert done.returncode == 1, done.stderr[-2000:]
    assert (f"{SYSTEM_FAILED}: step 0, in recall() did not return within its timeout (1 s) and could not be "
            f"interrupted: its process was killed") in done.stdout, done.stdout
    assert "1/2 scenario runs passed" in done.stdout  # the clean scenario, in a new child
    assert all((tmp_path / "out" / name).is_file() for name in OUTPUTS)


def test_threads_left_running_do_not_keep_memharness_alive(tmp_path: Path) -> None:
    system = tmp_path / "leaky.py"
    system.write_text("import threading\nfrom harness.system import reference_factory\n"
                      "def factory(w, c, m, e):\n"
                      "    threading.Thread(target=threading.Event().wait, name='leaked', daemon=False).start()\n"
                      "    return reference_factory(w, c, m, e)\n")
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([sys.executable, "-m", "harness", "run", str(HOSTILE_SCENARIO), "--system", "leaky:factory",
                           "--no-gates", "--out", str(tmp_path / "out")], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    # a plug-in system replays in a child process (harness/replay/_isolated.py), which says so and leaves at once
    assert "1 thread(s) the system under test started were still running when its replay process ended (leaked)" \
        in done.stderr, done.stderr


@pytest.mark.parametrize("leak", [0, 1, 3])
def test_descriptors_a_plug_in_leaves_open_are_said_by_its_replay_process(tmp_path: Path, leak: int) -> None:
    """Issue 33 F11: a plug-in that opens files (or sockets, pipes) and never closes them ran clean; its replay
    process now says how many descriptors more than at its start were open when it ended. A system that closes what
    it opens (``leak`` 0: it opens and closes as many) gets no note: the count is the system's, not the harness's."""
    system = tmp_path / f"fdleak{leak}.py"
    system.write_text("import os, socket\nfrom harness.system import reference_factory\nKEPT = []\n"
                      "OPENERS = [lambda: os.open(os.devnull, os.O_RDONLY), socket.socket, lambda: open(__file__)]\n"
                      "def factory(w, c, m, e):\n"
                      "    for i in range(3):  # each kind opened; the first `leak` kept, the others closed\n"
                      "        f = OPENERS[i]()\n"
                      f"        if i < {leak}:\n"
                      "            KEPT.append(f)\n"
                      "        else:\n"
                      "            os.close(f) if isinstance(f, int) else f.close()\n"
                      "    return reference_factory(w, c, m, e)\n")
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([sys.executable, "-m", "harness", "run", str(HOSTILE_SCENARIO), "--system",
                           f"fdleak{leak}:factory", "--no-gates", "--out", str(tmp_path / "out")], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    said = [line for line in done.stderr.splitlines() if "file descriptor(s)" in line]
    if leak:
        assert said == [f"note: {leak} more file descriptor(s) were open when the system under test's replay process "
                        "ended than when it started (left open by the system?): closed with the process"], done.stderr
    else:
        assert not said, done.stderr


@pytest.mark.parametrize("where", ["close"])
def test_a_close_that_raises_fails_the_scenario_after_its_last_step(tmp_path: Path, where: str) -> None:
    PLAN.clear()
    PLAN.update(call=where, how="raise", value=OSError("disk gone"))

    class _Closing(_Hostile):
        def close(self) -> None:
            raise OSError("disk gone")
    import tests.hostile_cli.test_hostile_systems as me

    original = me.factory
    me.factory = lambda w, c, m, e: _Closing(reference_factory(w, c, m, e))  # type: ignore[assignment]
    try:
        code = main(["run", str(HOSTILE_SCENARIO), "--system", f"{__name__}:factory", "--no-gates", "--out",
                     str(tmp_path / "out")], environ={})
    finally:
        me.factory = original
    [result] = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().split("\n") if line]
    assert code == 1
    assert result["failures"] == [f"after the last step: {SYSTEM_FAILED}: close() raised OSError: disk gone"]


def test_input_a_system_refuses_is_the_scenarios_error_not_the_systems_failure(tmp_path: Path) -> None:
    from harness.errors import ScenarioInputError

    PLAN.clear()
    PLAN.update(call="recall", how="raise", value=ScenarioInputError("recall option k: expected a number"))
    code = main(["run", str(HOSTILE_SCENARIO), "--system", f"{__name__}:factory", "--no-gates", "--out",
                 str(tmp_path / "out")], environ={})
    [result] = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().split("\n") if line]
    assert code == 2  # incomplete: the scenario asked for something the system refuses
    assert result["error"].endswith("step 0 (recall, line 16): recall option k: expected a number")
    assert SYSTEM_FAILED not in result["error"]


def test_the_per_operation_timeout_scales_with_the_model_a_cassette_wraps() -> None:
    from harness.replay._observed import op_timeout

    class Live:
        timeout_scale = 4.0

    class Recording:
        inner = Live()

    assert op_timeout(None, {}) == 120.0
    assert op_timeout(Recording(), {}) == 480.0  # record and --live: the wrapped model's scale
    assert op_timeout(Live(), {"MEMHARNESS_OP_TIMEOUT": "7"}) == 7.0
    assert op_timeout(None, {"MEMHARNESS_OP_TIMEOUT": "nan"}) == 120.0
