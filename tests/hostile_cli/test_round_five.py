"""Hostile probe, round five (issue 33): what a fresh, blind probe found after the isolation of plug-in systems —
a system attribute that raises or hangs, a call that ignores its timeout and returns late, a system that breaks
the harness's own code in its process, FIFOs named by --gates and --benchmark, durations in other scripts' digits,
run files with wrong-typed fields, a --max-drop that is no drop. Generated where the class allows it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.errors import SYSTEM_FAILED, HarnessError
from harness.reporting import read_run
from tests.harness.conftest import SCENARIOS
from tests.helpers import examples

REPO = Path(__file__).resolve().parents[2]
SCENARIO = SCENARIOS / "recall" / "multi-fact.yaml"
OUTPUTS = ("summary.json", "summary.md", "results.jsonl", "probes.jsonl", "traces.jsonl", "junit.xml", "report.html")

SYSTEM = '''
import signal, time
from tests.example_system import ExampleSystem

HOW = {how!r}

class Hostile(ExampleSystem):
    @property
    def design(self):
        if HOW == "design_raises":
            raise RuntimeError("no design today")
        if HOW == "design_hangs":
            time.sleep(3600)
        return ""

    def recall(self, *args, **kwargs):
        if HOW in ("evil_reduce", "subclass"):
            import dataclasses, os
            from harness.system import RecallResult

            class Evil(str):  # unpickling this in the harness's process would end it with exit code 0
                def __reduce__(self):
                    return (os._exit, (0,))

            class Sub(RecallResult):
                __slots__ = ()

            real = super().recall(*args, **kwargs)
            if HOW == "subclass":
                return Sub(selected=5)
            return dataclasses.replace(real, strategy=Evil(real.strategy))
        if HOW == "late":  # the timeout's signal ignored: returns 2.5 s later, within the kill grace
            signal.signal(signal.SIGALRM, signal.SIG_IGN)
            time.sleep(2.5)
        if HOW == "breaks_harness":  # breaks what the harness uses in this process, then behaves
            import harness.replay._observed as observed
            observed.WATCH = lambda *a: 1 / 0
        return super().recall(*args, **kwargs)

def factory(workdir, clock, model, events):
    return Hostile()
'''


def _run(tmp_path: Path, how: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    (tmp_path / "hostile_round5.py").write_text(textwrap.dedent(SYSTEM.format(how=how)), encoding="utf-8")
    out = tmp_path / "out"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "MEMHARNESS_OP_TIMEOUT": "1",
           "PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}"}
    done = subprocess.run([sys.executable, "-m", "harness", "run", str(SCENARIO), "--system", "hostile_round5:factory",
                           "--no-gates", "--out", str(out)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    return done, out


@pytest.mark.parametrize(("how", "said"), [
    ("design_raises", "design() raised RuntimeError: no design today"),
    ("design_hangs", "design() did not return within 1 s"),
    ("late", "recall() did not return within 1 s (it returned after 2.5"),
])
def test_the_system_fails_not_the_harness(tmp_path: Path, how: str, said: str) -> None:
    done, out = _run(tmp_path, how)
    assert done.returncode == 1, done.stdout[-1500:] + done.stderr[-1500:]
    assert f"{SYSTEM_FAILED}: " in done.stdout
    assert said in done.stdout, done.stdout[-1500:]
    assert "internal error" not in done.stderr
    assert all((out / name).is_file() for name in OUTPUTS)


def test_what_a_child_sends_back_is_data_never_code(tmp_path: Path) -> None:
    """Review of the isolation: the child's answer was a pickle, so a str subclass whose ``__reduce__`` is
    ``os._exit(0)`` ended the harness with exit 0 and no output when the parent unpickled it. Answers are JSON now:
    the value arrives as the text it holds and the run finishes normally."""
    done, out = _run(tmp_path, "evil_reduce")
    assert done.returncode == 0, done.stdout[-1500:] + done.stderr[-1500:]
    assert "PASSED" in done.stdout
    assert all((out / name).is_file() for name in OUTPUTS)


def test_a_result_subclass_is_shape_checked_too(tmp_path: Path) -> None:
    done, _ = _run(tmp_path, "subclass")
    assert done.returncode == 1, done.stdout[-1500:] + done.stderr[-1500:]
    assert "recall() returned a Sub with selected=5 (int), expected tuple[str, ...]" in done.stdout


def test_a_keyboard_interrupt_is_the_users_unless_the_harness_can_tell() -> None:
    """Without the CLI's SIGINT watcher (a library caller, the pytest plugin) a KeyboardInterrupt during a call
    into the system stops the caller, as Ctrl-C should; with it, only one the user sent does."""
    from harness.errors import INTERRUPTS_WATCHED, USER_INTERRUPT
    from harness.replay._observed import _contained

    watched = INTERRUPTS_WATCHED.is_set()
    INTERRUPTS_WATCHED.clear()
    try:
        with pytest.raises(KeyboardInterrupt), _contained("recall", 5):
            raise KeyboardInterrupt
        INTERRUPTS_WATCHED.set()
        USER_INTERRUPT.clear()
        with pytest.raises(HarnessError, match=r"recall\(\) raised KeyboardInterrupt"), _contained("recall", 5):
            raise KeyboardInterrupt
    finally:
        (INTERRUPTS_WATCHED.set if watched else INTERRUPTS_WATCHED.clear)()


def test_a_system_that_breaks_the_harness_in_its_process_costs_its_scenario_not_the_run(tmp_path: Path) -> None:
    """It replaced the harness's own call watcher with one that raises: the step that met it fails as the system's
    failure naming what it replaced and the step (FAILED, exit 1; round 14b: it was INCOMPLETE, the harness's error),
    the run still finishes and writes every output, and nothing is an internal error."""
    done, out = _run(tmp_path, "breaks_harness")
    assert done.returncode == 1, done.stdout[-1500:] + done.stderr[-1500:]
    assert "it replaced the harness's own harness.replay._observed.WATCH in the process replaying it" in done.stdout
    assert "step 0 (recall, line 16): ZeroDivisionError" in done.stdout, done.stdout[-1500:]
    assert "internal error" not in done.stderr
    assert all((out / name).is_file() for name in OUTPUTS)


@pytest.mark.parametrize("option", ["--gates", "--benchmark"])
def test_a_fifo_named_by_an_option_is_refused_before_the_replay(tmp_path: Path, option: str,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    code = main(["run", str(SCENARIO), option, str(fifo), "--out", str(tmp_path / "out")], environ={})
    assert code == 2
    err = capsys.readouterr().err
    assert f"{fifo}:1: file: not a regular file (a FIFO)" in err
    assert "replayed" not in err  # refused before any replay
    assert not (tmp_path / "out").exists()


NON_ASCII_DIGITS = st.sampled_from([c for c in map(chr, range(0x80, 0x10000))
                                    if unicodedata.category(c) == "Nd"])


@settings(max_examples=examples(50), deadline=None)
@given(st.lists(NON_ASCII_DIGITS, min_size=1, max_size=3).map("".join), st.sampled_from("smhd"),
       st.sampled_from(["advance", "age"]), st.booleans())
def test_a_duration_in_other_digits_or_with_a_newline_is_refused(tmp_path_factory: Any, digits: str, unit: str,
                                                                 where: str, newline: bool) -> None:
    raw = f"1{unit}\n" if newline else f"{digits}{unit}"
    doc: dict[str, Any] = {"description": "d", "strategies": ["heuristic"],
                           "memories": [{"path": "user/a.md", "name": "a", "type": "user", "body": "b"}],
                           "steps": [{"check": {"index_within_limits": True}}]}
    if where == "age":
        doc["memories"][0]["age"] = raw
    else:
        doc["steps"].insert(0, {"advance": raw})
    path = tmp_path_factory.mktemp("dur") / "x.yaml"
    path.write_text(json.dumps(doc, ensure_ascii=True), encoding="utf-8")
    from harness.errors import ScenarioError
    from harness.scenario import load_scenario

    with pytest.raises(ScenarioError, match=r"x\.yaml:1: .*(advance|age): expected a duration like 30s"):
        load_scenario(path)


WRONG = st.one_of(st.text(max_size=5), st.integers(), st.none(), st.booleans(), st.lists(st.integers(), max_size=2),
                  st.dictionaries(st.text(max_size=3), st.integers(), max_size=2), st.floats(allow_nan=False))


@settings(max_examples=examples(60), deadline=None)
@given(file=st.sampled_from(["results.jsonl", "probes.jsonl"]), data=st.data())
def test_a_run_file_field_of_the_wrong_type_is_named_with_its_file_and_line(tmp_path_factory: Any, file: str,
                                                                          data: st.DataObject) -> None:
    """Hostile probe, round five: ``"passed": "yes"`` in results.jsonl was read as a pass by report, merge and
    compare. Any checked field replaced by a value of another JSON type is `file:line: field: expected …`."""
    from harness.replay import Probe, ScenarioResult
    from harness.reporting._rundir import REQUIRED_FIELDS
    from harness.reporting._typed import row_problem

    record = ScenarioResult if file == "results.jsonl" else Probe

    run = tmp_path_factory.mktemp("run")
    for name in ("summary.json", "results.jsonl", "probes.jsonl"):
        (run / name).write_bytes((_good_run() / name).read_bytes())
    lines = (run / file).read_text(encoding="utf-8").split("\n")
    rows = [i for i, line in enumerate(lines) if line.strip()]
    i = data.draw(st.sampled_from(rows), label="row")
    row = json.loads(lines[i])
    field = data.draw(st.sampled_from(sorted(REQUIRED_FIELDS[file])), label="field")
    value = data.draw(WRONG.filter(lambda v: (row_problem({field: v}, record) or "").startswith(f"{field}: ")),
                      label="value")  # of another type than the record's field (its own, not an element's)
    row[field] = value
    lines[i] = json.dumps(row)
    (run / file).write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(HarnessError, match=rf"{file}:{i + 1}: {field}: expected "):
        read_run(run)


_GOOD: list[Path] = []


def _good_run() -> Path:
    """One small real run directory, made once per session."""
    if not _GOOD:
        import tempfile

        out = Path(tempfile.mkdtemp(prefix="good-run-")) / "run"
        assert main(["run", str(SCENARIO), "--no-gates", "--out", str(out)], environ={}) == 0
        _GOOD.append(out)
    return _GOOD[0]


@pytest.mark.parametrize("value", ["nan", "-inf", "inf", "-0.1", "1.5", "x"])
def test_max_drop_is_a_drop(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    run = str(_good_run())
    assert main(["compare", f"--max-drop={value}", run, run], environ={}) == 2
    assert "argument --max-drop: expected a drop from 0 to 1" in capsys.readouterr().err
