"""A plug-in system's import and construction never run in the harness's own process (issue 33).

``memharness run`` and ``memharness conformance`` read what a plug-in declares in a child process
(harness/replay/_inspect.py) and replay it in children (harness/replay/_isolated.py): a module that exits, raises,
hangs or prints at import is one line on stderr (exit 2, never 0, never a traceback), and a module that only prints
still runs with the harness's stdout its own. Generated: Hypothesis picks what the import does."""

from __future__ import annotations

import os
import signal
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.errors import SYSTEM_FAILED
from tests.harness.conftest import SCENARIOS
from tests.helpers import examples
from tests.hostile_cli import test_hostile_systems as hostile  # its hostile factory (not under a running @given)

SCENARIO = SCENARIOS / "recall" / "multi-fact.yaml"
FACTORY = ("from harness.system import reference_factory\n"
           "def factory(w, c, m, e):\n"
           "    return reference_factory(w, c, m, e)\n")

AT_IMPORT = st.one_of(
    st.tuples(st.just("exit_now"), st.integers(0, 255)),
    st.tuples(st.just("sys_exit"), st.one_of(st.none(), st.integers(-3, 300), st.text(max_size=10))),
    st.tuples(st.just("raise"), st.sampled_from(["RuntimeError", "ValueError", "ImportError", "KeyboardInterrupt",
                                                  "MemoryError", "RecursionError", "GeneratorExit", "OSError"])),
    st.tuples(st.just("kill"), st.sampled_from([signal.SIGKILL, signal.SIGTERM, signal.SIGSEGV, signal.SIGABRT])),
    st.tuples(st.just("hang"), st.sampled_from(["sleep", "alarm_off"])),
    st.tuples(st.just("print"), st.text(max_size=40)),
    st.tuples(st.just("fd1"), st.binary(min_size=1, max_size=30)),
)


def _module(tmp: Path, how: str, value: Any, marker: Path) -> str:
    """A module that records the pid importing it, misbehaves ``how``, then defines ``factory``; its name."""
    name = f"plug_{uuid.uuid4().hex[:10]}"
    body = {
        "exit_now": lambda: f"os._exit({value})",
        "sys_exit": lambda: f"sys.exit({value!r})",
        "raise": lambda: f"raise {value}('at import')",
        "kill": lambda: f"os.kill(os.getpid(), {int(value)})",
        "hang": lambda: ("signal.signal(signal.SIGALRM, signal.SIG_IGN)\n" if value == "alarm_off" else "")
        + "threading.Event().wait(3600)",
        "print": lambda: f"print('PLUGIN-SAYS', {value!r})",
        "fd1": lambda: f"os.write(1, b'PLUGIN-FD1' + {value!r})",
    }[how]()
    (tmp / f"{name}.py").write_text(f"import os, signal, sys, threading\n"
                                    f"with open({str(marker)!r}, 'a') as f: f.write(f'{{os.getpid()}}\\n')\n"
                                    f"{body}\n{FACTORY}")
    return name


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(misbehaviour=AT_IMPORT)
def test_a_plugin_import_never_runs_in_the_harness_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capfd: pytest.CaptureFixture[str],
                                                           misbehaviour: tuple[str, Any]) -> None:
    from harness.replay import _inspect

    how, value = misbehaviour
    monkeypatch.setattr(_inspect, "INSPECT_TIMEOUT_S", 2.0)
    monkeypatch.chdir(tmp_path)  # `--system module:factory` names a module of the current directory
    marker = tmp_path / f"imported-{uuid.uuid4().hex[:6]}"
    name = _module(tmp_path, how, value, marker)
    out = tmp_path / f"run-{uuid.uuid4().hex[:6]}"
    capfd.readouterr()
    code = main(["run", str(SCENARIO), "--system", f"{name}:factory", "--no-gates", "--out", str(out)], environ={})
    stdout, stderr = capfd.readouterr()
    pids = {int(p) for p in marker.read_text().split()} if marker.exists() else set()
    assert os.getpid() not in pids  # the harness's own process never imported it
    assert "Traceback" not in stdout + stderr
    if how in ("print", "fd1"):  # a module that only prints still runs, and its text is not the harness's stdout
        assert code == 0, stdout + stderr
        assert (out / "report.html").is_file()
        assert "PASSED — 1/1 scenario runs passed" in stdout
        assert "PLUGIN-" not in stdout
        assert "PLUGIN-" in stderr
        return
    assert code == 2, stdout + stderr
    assert pids, "the module was never imported"
    line = stderr.strip().splitlines()[-1]
    assert line.startswith("memharness: "), stderr
    assert f"--system {name}:factory" in line, stderr
    what = {"hang": "did not finish within 2 s", "exit_now": "ended its process", "kill": "ended its process",
            "sys_exit": "SystemExit", "raise": "at import" if value not in ("KeyboardInterrupt", "GeneratorExit")
            else value}[how]
    assert what in line, line
    assert not out.exists()


@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(call=st.sampled_from(["recall", "seed", "documents", "extract"]),
       how=st.sampled_from(["none", "exit_now", "signal", "raise", "hang_hard"]))
def test_conformance_contains_a_hostile_system(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capfd: pytest.CaptureFixture[str], call: str, how: str) -> None:
    """Conformance replays a plug-in in child processes: a call that exits, is killed, raises or defeats its timeout
    makes a capability whose case calls it ``wrong`` (exit 1) with the system's failure naming the call, never a
    hang, an exit of the harness or a traceback; the same system behaving (``none``) is ok everywhere (exit 0), so
    the rows above come from the misbehaviour (the review found this test passing for a benign system when its
    paths had no cassettes)."""
    from harness.replay import _isolated

    monkeypatch.setenv("MEMHARNESS_OP_TIMEOUT", "1")
    monkeypatch.setattr(_isolated, "KILL_GRACE_S", 1.0)
    hostile.PLAN.clear()
    if how != "none":
        hostile.PLAN.update(call=call, how=how, value={"exit_now": 3, "signal": signal.SIGKILL,
                                                       "raise": RuntimeError("boom"), "hang_hard": None}[how])
    try:
        capfd.readouterr()
        code = main(["conformance", "--system", "tests.hostile_cli.test_hostile_systems:factory", "--cases", "1",
                     str(SCENARIOS)], environ={})
        stdout, stderr = capfd.readouterr()
    finally:
        hostile.PLAN.clear()
    assert "Traceback" not in stdout + stderr
    wrong = [line for line in stdout.splitlines() if "  wrong" in line]
    if how == "none":
        assert code == 0, stdout + stderr
        assert not wrong, stdout
        return
    assert code == 1, stdout + stderr
    assert any(SYSTEM_FAILED in line and f"{call}()" in line for line in wrong), stdout


def test_conformance_reports_a_system_that_cannot_be_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "unbuildable.py").write_text("import os\ndef factory(w, c, m, e):\n    os._exit(0)\n")
    code = main(["conformance", "--system", "unbuildable:factory", str(SCENARIOS)], environ={})
    stdout, stderr = capfd.readouterr()
    assert code == 1, stdout + stderr  # imported fine: the factory ended the process, the system's failure
    assert "  wrong" in stdout, stdout
    assert "--system unbuildable:factory: its factory or instance, read after its import, ended its process (exit " \
           "code 0" in stdout, stdout
    (tmp_path / "raising.py").write_text("def factory(w, c, m, e):\n    raise ValueError('no store here')\n")
    (tmp_path / "stringly.py").write_text("from harness.system import reference_factory\n"
                                         "def factory(w, c, m, e):\n    s = reference_factory(w, c, m, e)\n"
                                         "    class S:\n        strategies = 'heuristic'\n"
                                         "        def __getattr__(self, n): return getattr(s, n)\n    return S()\n")
    code = main(["conformance", "--system", "stringly:factory", str(SCENARIOS)], environ={})
    stdout, stderr = capfd.readouterr()
    assert code == 1, stdout + stderr
    assert "its strategies is str 'heuristic'; expected a set of strategy names" in stdout, stdout
    code = main(["conformance", "--system", "raising:factory", str(SCENARIOS)], environ={})
    stdout, stderr = capfd.readouterr()
    assert code == 1, stdout + stderr
    assert "  wrong" in stdout, stdout
    assert "building one instance raised ValueError: no store here" in stdout, stdout


def test_children_that_keep_dying_never_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replay processes that end as soon as they start (before or after taking a scenario) fail the scenarios
    left, saying so; ``run_isolated`` never replaces them for ever."""
    from harness.replay import RunConfig, _isolated
    from harness.scenario import load_all

    monkeypatch.setattr(_isolated, "_main", lambda *args: os._exit(0))
    scenarios = load_all([SCENARIOS / "forget"])[:6]
    config = RunConfig(None, system="tests.hostile_cli.test_hostile_systems:factory")
    out = dict(_isolated.run_isolated(scenarios, config, 2))
    assert sorted(out) == list(range(len(scenarios)))
    for results, _ in out.values():
        assert results
        assert all(not r.passed and SYSTEM_FAILED in r.failures[0] for r in results)


@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(returned=st.sampled_from(["None", "5", "'system'", "object()", "{}", "[]", "lambda: None"]))
def test_a_factory_that_returns_no_system_is_the_systems_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capfd: pytest.CaptureFixture[str],
                                                                 returned: str) -> None:
    """Found by the sixth blind probe: a factory returning None was the harness's error (INCOMPLETE, exit 2)."""
    monkeypatch.chdir(tmp_path)
    name = f"plug_{uuid.uuid4().hex[:10]}"
    (tmp_path / f"{name}.py").write_text(f"def factory(w, c, m, e):\n    return {returned}\n")
    capfd.readouterr()
    code = main(["run", str(SCENARIO), "--system", f"{name}:factory", "--no-gates", "--out", str(tmp_path / name)],
                environ={})
    stdout, _ = capfd.readouterr()
    assert code == 1, stdout
    assert f"{SYSTEM_FAILED}: it has no seed() (its factory returned " in stdout, stdout
    assert "FAILED — 0/1 scenario runs passed" in stdout, stdout


@pytest.mark.parametrize("where", ["import", "recall"])
def test_a_plugin_that_forks_and_exits_is_seen_at_once_and_its_fork_killed(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch,
                                                                          capfd: pytest.CaptureFixture[str],
                                                                          where: str) -> None:
    """The review: a grandchild holding the pipes open hid its parent's end (the harness waited for the
    grandchild, up to 120 s, then blamed a timeout). Now the end is seen by waitpid, and the whole process group
    is killed (the grandchild too)."""
    import time

    monkeypatch.chdir(tmp_path)
    name = f"plug_{uuid.uuid4().hex[:10]}"
    pids = tmp_path / "forked"
    # the fork names itself (whole: written aside and renamed) before its parent exits: the harness now kills what
    # a plug-in leaves so soon (round 14b) that a grandchild could be gone before it wrote its pid
    fork = (f"if os.fork() == 0:\n    open({str(pids) + '.tmp'!r}, 'w').write(str(os.getpid()))\n"
            f"    os.rename({str(pids) + '.tmp'!r}, {str(pids)!r})\n    time.sleep(120)\n    os._exit(0)\n"
            f"while not os.path.exists({str(pids)!r}):\n    time.sleep(0.01)\nos._exit(0)\n")
    if where == "import":
        body = f"import os, time\n{fork}"
    else:
        body = ("import os, time\nfrom harness.system import reference_factory\nclass S:\n"
                "    def __init__(self, inner): self.inner = inner\n"
                "    def __getattr__(self, n): return getattr(self.inner, n)\n"
                "    def recall(self, *a, **k):\n" + "".join(f"        {line}\n" for line in fork.splitlines())
                + "def factory(w, c, m, e):\n    return S(reference_factory(w, c, m, e))\n")
    (tmp_path / f"{name}.py").write_text(body)
    t0 = time.monotonic()
    code = main(["run", str(SCENARIO), "--system", f"{name}:factory", "--no-gates", "--out", str(tmp_path / "o")],
                environ={})
    stdout, stderr = capfd.readouterr()
    assert time.monotonic() - t0 < 60, "waited for the grandchild"
    assert code == (2 if where == "import" else 1), stdout + stderr
    assert "ended" in stdout + stderr, stdout + stderr
    deadline = time.monotonic() + 10
    while not pids.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    grandchild = int(pids.read_text())
    while time.monotonic() < deadline:
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the grandchild {grandchild} is still running")
