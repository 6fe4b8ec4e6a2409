"""SIGTERM (a CI job cancelled, ``timeout``, ``kill``) at any moment of ``memharness run`` ends it as Ctrl-C does:
exit 143 with one line ``memharness: terminated`` (130 and ``interrupted`` for SIGINT), no traceback, the run
directory the previous run's or the new one's whole, no staging directory beside it (not left for the next run to
sweep), and no process of the run left behind.

Generated: the signal, the moment (from start-up to the last file written), ``--jobs`` 1 or 2, and whether the
signal goes to the run's process alone or to its whole process group (a terminal's Ctrl-C, a CI runner)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.harness.conftest import SCENARIOS
from tests.helpers import examples

REPO = Path(__file__).resolve().parents[2]
START_S = 0.3
"""The interpreter's start and ``harness.errors``'s import, before the handlers are installed (~0.1 s here)."""
RUN_FILES = {"summary.json", "probes.jsonl", "results.jsonl", "traces.jsonl", "junit.xml", "summary.md", "report.html"}


def _run(out: Path, jobs: int) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "harness", "run", str(SCENARIOS / "recall"), "--no-gates",
                             "--jobs", str(jobs), "--out", str(out)], cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": str(REPO), "LITELLM_LOCAL_MODEL_COST_MAP": "True"})


def _group_gone(pgid: int) -> bool:
    for _ in range(50):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


@pytest.fixture(scope="module")
def lengths(tmp_path_factory: pytest.TempPathFactory) -> dict[int, float]:
    """How long a whole run takes here, now, by ``--jobs``: a moment is a share of it."""
    out: dict[int, float] = {}
    for jobs in (1, 2):
        start = time.monotonic()
        with _run(tmp_path_factory.mktemp("length") / "latest", jobs) as proc:
            _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        out[jobs] = time.monotonic() - start
    return out


@pytest.mark.slow  # two runs per example (tests/_tiers.py)
@settings(max_examples=examples(12), deadline=None, derandomize=True, phases=[Phase.generate],  # no minutes shrinking
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(sig=st.sampled_from([signal.SIGTERM, signal.SIGINT]), at=st.floats(0.0, 1.05), jobs=st.sampled_from([1, 2]),
       group=st.booleans())
def test_a_terminated_run_leaves_the_previous_run_or_a_whole_new_one(
        tmp_path_factory: pytest.TempPathFactory, lengths: dict[int, float], sig: signal.Signals, at: float,
        jobs: int, group: bool) -> None:
    tmp = tmp_path_factory.mktemp("terminated")
    out = tmp / "latest"
    with _run(out, jobs) as first:
        _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    before = (out / "summary.json").read_bytes()
    with _run(out, jobs) as proc:
        time.sleep(at * lengths[jobs])
        (os.killpg if group else os.kill)(proc.pid, sig)
        _, err = proc.communicate(timeout=120)
    lines = err.strip().splitlines()
    assert "Traceback" not in err, err[-2000:]
    if proc.returncode == -sig:  # before the handlers were installed (the interpreter's own start): nothing begun
        assert at * lengths[jobs] < START_S, at * lengths[jobs]
        assert not err, err
    elif proc.returncode != 0:  # the run had not finished
        expected = (143, "memharness: terminated") if sig == signal.SIGTERM else (130, "memharness: interrupted")
        assert (proc.returncode, lines[-1] if lines else "") == expected, err[-2000:]
    names = {p.name for p in out.iterdir()}
    assert names == RUN_FILES, names  # the previous run or the new one, whole
    if proc.returncode != 0:
        assert (out / "summary.json").read_bytes() == before
    beside = sorted(p.name for p in tmp.iterdir() if not p.name.startswith("history.sqlite"))
    assert beside == ["latest"]  # no staging directory left for the next run to sweep
    assert _group_gone(proc.pid), "a process of the run is still alive"


@pytest.mark.parametrize("where", ["replay", "evaluation"])
def test_a_stop_whose_exception_was_lost_still_stops_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str], where: str) -> None:
    """Found with 270 SIGTERMs at random moments: 3 runs finished and exited 0, because the handler's
    KeyboardInterrupt landed inside numpy's import (an extension module's init), which turned it into another error
    that was handled. The handler's flag is checked again between scenarios and before anything is written."""
    from harness.cli import main
    from harness.errors import TERMINATED, USER_INTERRUPT
    from harness.evaluation import _run as evaluation_run
    from harness.replay import _suite

    def lost() -> None:  # what the handler leaves when its exception is swallowed where it lands
        USER_INTERRUPT.set()
        TERMINATED.set()

    if where == "replay":
        real = _suite.Worker.run

        def run(self: _suite.Worker, scenario: object) -> object:
            lost()
            return real(self, scenario)  # type: ignore[arg-type]

        monkeypatch.setattr(_suite.Worker, "run", run)
    else:
        real_evaluate = evaluation_run.evaluate_run

        def evaluate(*args: object, **kwargs: object) -> object:
            lost()
            return real_evaluate(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr("harness.evaluation.evaluate_run", evaluate)
    out = tmp_path / "out"
    try:
        code = main(["run", str(SCENARIOS / "recall" / "type-user.yaml"), "--no-gates", "--out", str(out)])
    finally:
        USER_INTERRUPT.clear()
        TERMINATED.clear()
    assert (code, capsys.readouterr().err.strip().splitlines()[-1]) == (143, "memharness: terminated")
    assert not out.exists()


def _children(pid: int) -> set[int]:
    try:
        return {int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}
    except OSError:
        return set()


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.slow  # waits for the workers (tests/_tiers.py)
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc")
def test_a_killed_run_leaves_no_worker_behind(tmp_path: Path) -> None:
    """Hostile probe, round 8: a `run --jobs 2` SIGKILLed left its workers alive for good, holding the caller's
    stderr open (3 of 11 kills); now each worker dies with the run's process."""
    with _run(tmp_path / "latest", 2) as proc:
        deadline = time.monotonic() + 60
        while len(_children(proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # the workers' initialiser has run
        workers = _children(proc.pid)
        assert workers
        proc.kill()
        proc.communicate(timeout=60)
    deadline = time.monotonic() + 10
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [w for w in workers if _alive(w)]
