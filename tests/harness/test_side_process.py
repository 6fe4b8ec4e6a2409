"""The side process of a serial run (harness/replay/_side.py): used, stopped when not needed, and its failures
reach the user as one clear error. (That its results equal an in-process replay is tests/harness/test_cli.py.)"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import HarnessError
from harness.replay import RunConfig, _side
from harness.scenario import Scenario, load_all

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


@pytest.fixture
def no_litellm_import(monkeypatch: pytest.MonkeyPatch) -> None:
    """The forked child inherits this patch: it skips the seconds-long import these tests do not need."""
    import memory_core.litellm_model as lm

    monkeypatch.setattr(lm, "_litellm", lambda: None)


@pytest.mark.usefixtures("no_litellm_import")
def test_a_prestarted_side_process_the_run_does_not_need_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_side, "possible", lambda: True)  # whatever this worker has imported already
    _side.prestart()
    side = _side._PRESTARTED
    assert side is not None
    try:
        _side.prestart()
        assert _side._PRESTARTED is side  # one at a time
    finally:
        _side.discard()
    assert _side._PRESTARTED is None
    assert not side.process.is_alive()
    assert side.process.exitcode in (0, -signal.SIGKILL)


def test_a_side_process_not_needed_is_stopped_at_once_whatever_its_sigterm_handler(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: a run that ended at once (a path with no scenario) waited 3-4 s in ``discard``: SIGTERM reached
    the child before it dropped the run's inherited handler (which only notes the request), and litellm's import
    went on. Here the child keeps such a handler and its import takes 30 s; ``discard`` returns at once."""
    import time

    import memory_core.litellm_model as lm

    monkeypatch.setattr(lm, "_litellm", lambda: time.sleep(30))
    monkeypatch.setattr(_side, "child_signals", lambda: signal.signal(signal.SIGTERM, lambda *_: None))
    monkeypatch.setattr(_side, "possible", lambda: True)
    _side.prestart()
    side = _side._PRESTARTED
    assert side is not None
    time.sleep(0.3)  # the child is in its import now, SIGTERM noted and ignored
    started = time.perf_counter()
    _side.discard()
    assert time.perf_counter() - started < 5.0
    assert not side.process.is_alive()


@pytest.mark.usefixtures("no_litellm_import")
def test_the_side_process_replays_what_it_is_given_in_order() -> None:
    scenarios = [s for s in load_all([SCENARIOS / "forget"])][:3]
    side = _side.SideProcess()
    side.replay(RunConfig(("heuristic",)), scenarios)
    outputs = side.outputs()
    assert [results[0].scenario for results, _ in outputs] == [s.id for s in scenarios]
    assert all(r.status == "passed" for results, _ in outputs for r in results)
    assert all(spans for _, spans in outputs)  # each scenario's trace came back with it
    assert not side.process.is_alive()


def test_a_side_process_that_cannot_import_litellm_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import memory_core.litellm_model as lm

    def broken() -> None:
        raise ImportError("No module named 'litellm'")

    monkeypatch.setattr(lm, "_litellm", broken)
    side = _side.SideProcess()
    side.replay(RunConfig(("model",)), [])
    with pytest.raises(HarnessError, match=r"cannot import litellm for the model-fault scenarios: ImportError"):
        side.outputs()


@pytest.mark.usefixtures("no_litellm_import")
def test_a_side_process_that_died_is_one_clear_error() -> None:
    side = _side.SideProcess()
    side.process.kill()
    side.process.join()

    def hand_over_and_collect() -> None:  # the death shows at whichever end of the pipe notices it first
        side.replay(RunConfig(("heuristic",)), [])
        side.outputs()

    with pytest.raises(HarnessError, match=r"side process .* died \(exit code -9\)"):
        hand_over_and_collect()


def test_no_side_process_without_a_spare_core_in_this_process_affinity(monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import sys

    monkeypatch.delitem(sys.modules, "litellm", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert _side.possible()
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3})  # taskset -c 3, or a one-cpu container
    assert not _side.possible()


class _TwoArgs(Exception):
    """Pickles, but does not unpickle (its __init__ wants two arguments): as some providers' errors do."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")


def test_an_error_of_the_side_process_that_does_not_unpickle_arrives_as_its_text(
        monkeypatch: pytest.MonkeyPatch, no_litellm_import: None) -> None:
    from harness.replay import _suite

    def boom(self: object, scenario: object) -> None:
        raise _TwoArgs(503, "provider unavailable")

    monkeypatch.setattr(_suite.Worker, "run", boom)  # the forked child inherits the patch
    side = _side.SideProcess()
    side.replay(RunConfig(("heuristic",)), [s for s in load_all([SCENARIOS / "forget"])][:1])
    with pytest.raises(HarnessError, match=r"_TwoArgs: 503: provider unavailable"):
        side.outputs()
    assert not side.process.is_alive()


def _gone(pid: int) -> bool:
    """Exited: no such process, or a zombie waiting for whoever adopted it to reap it."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return "\nState:\tZ" in status


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_the_side_process_leaves_when_its_parent_dies_without_cleaning_up(tmp_path: Path) -> None:
    import subprocess
    import sys
    import time

    script = tmp_path / "parent.py"
    script.write_text(
        "import os, signal, sys, time\n"
        "import memory_core.litellm_model as lm\n"
        "lm._litellm = lambda: time.sleep(0.5)  # a short stand-in for the import\n"
        "from harness.replay import _side\n"
        "side = _side.SideProcess()\n"
        "print(side.process.pid, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)  # no finally, no atexit: as a CI cancel or an OOM kill\n",
        encoding="utf-8")
    parent = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False)
    assert parent.returncode == -9, parent.stderr[-2000:]
    child = int(parent.stdout.split()[0])
    deadline = time.monotonic() + 20
    while not _gone(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(child), f"side process {child} outlived its parent"


_FORGET = load_all([SCENARIOS / "forget"])[:4]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(handed=st.lists(st.sampled_from(_FORGET), max_size=3, unique_by=lambda s: s.id))
def test_the_side_process_imports_litellm_only_when_handed_scenarios(monkeypatch: pytest.MonkeyPatch,
                                                                     handed: list[Scenario]) -> None:
    """Regression (issue 34, peak memory): a prestarted side process imported litellm (~140 MiB) at once, so a run
    with no model fault still had a process of 170-230 MiB by the time a large suite was loaded."""
    import tempfile
    import time

    import memory_core.litellm_model as lm

    marker = Path(tempfile.mkdtemp(prefix="mem-side-")) / "imported"
    monkeypatch.setattr(lm, "_litellm", lambda: marker.touch())  # the forked child inherits the stand-in
    monkeypatch.setattr(_side, "possible", lambda: True)
    _side.prestart()
    if handed:
        side = _side.take()
        side.replay(RunConfig(("heuristic",)), handed)
        assert [results[0].scenario for results, _ in side.outputs()] == [s.id for s in handed]
        assert marker.exists()
    else:
        time.sleep(0.3)  # long enough for a child that imports at once to have started
        side = _side._PRESTARTED
        _side.discard()
        assert side is not None
        assert not side.process.is_alive()
        assert not marker.exists()
