"""Round 7 of the hostile-input trial (a helper's blind probe): the environment, narrow consoles, full disks, memory
limits. Each test is generated or drives the real command; each fails on the code before its fix."""

from __future__ import annotations

import errno
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.telemetry import exporters

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "scenarios" / "recall" / "type-user.yaml"
READ = ["MEMHARNESS_RUN_ID", "MEMHARNESS_OP_TIMEOUT", "MEMHARNESS_GIT_COMMIT", "MEMHARNESS_PROJECT", "MEMHARNESS_TRACE_URL",
        "OTEL_SERVICE_NAME", "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT",
        "OTEL_TRACES_EXPORTER", "OTEL_RESOURCE_ATTRIBUTES", "GITHUB_RUN_ID"]
HOSTILE = st.one_of(st.sampled_from(["", " ", "-1", "nan", "inf", "1e99", "5m", ",,,", "abc", "0", "7", "\x1b[31m",
                                     "a\nb", "\udcff\udcfe", "x" * 300, "otlp,console", "OTLP", "bogus"]),
                    st.text(max_size=12).filter(lambda t: "\x00" not in t))  # the environment cannot hold a NUL


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(env=st.dictionaries(st.sampled_from(READ), HOSTILE, min_size=1, max_size=3))
def test_a_hostile_environment_is_one_line_before_any_work(env: dict[str, str], tmp_path_factory: pytest.TempPathFactory,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Round 7: non-UTF-8 values ended a finished run in 'internal error' (8 variables), bad OTEL_*_LIMIT values
    were internal errors, a MEMHARNESS_OP_TIMEOUT of '5m' was silently 120 s. Now each is refused first, naming
    the variable, or runs."""
    out = tmp_path_factory.mktemp("env") / "out"
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("MEMHARNESS_HISTORY", raising=False)
        mp.setenv("MEMHARNESS_HISTORY", str(out.parent / "history.sqlite"))
        for name, value in env.items():
            mp.setenv(name, value)  # the SDK reads its limits from the process environment itself
        capsys.readouterr()
        code = main(["run", str(SCENARIO), "--out", str(out), "--no-gates"])
    err = capsys.readouterr().err
    assert "internal error" not in err, err
    assert "Traceback" not in err
    assert code in (0, 2), (code, err)
    if code == 2:
        lines = [line for line in err.splitlines() if line.startswith("memharness: ")]
        assert len(lines) == 1, err
        assert "environment variable" in lines[0], lines[0]
        assert not out.exists(), "a refused environment still replayed"
        assert any(name in lines[0] for name in env)


@pytest.mark.parametrize(("name", "value"), [("MEMHARNESS_OP_TIMEOUT", "5m"), ("MEMHARNESS_OP_TIMEOUT", "-1"),
                                             ("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", ",,,"),
                                             ("MEMHARNESS_RUN_ID", "\udcff\udcfe"), ("OTEL_SERVICE_NAME", "\udcff"),
                                             ("MEMHARNESS_RUN_ID", "a b")])
def test_each_known_bad_value_is_refused(name: str, value: str, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(name, value)
    assert main(["validate", str(SCENARIO)]) == 2
    assert capsys.readouterr().err.startswith(f"memharness: environment variable {name}: ")


@given(st.lists(st.sampled_from(["otlp", "OTLP", "Console", "console", "none", "NONE", "bogus", " otlp ", ""]),
                max_size=4))
def test_exporter_lists_read_as_opentelemetry_reads_them(kinds: list[str]) -> None:
    """Round 7: 'OTLP' and 'otlp,console' exported nothing, silently (only == 'otlp' was understood)."""
    raw = ",".join(kinds)
    got = exporters({"OTEL_TRACES_EXPORTER": raw}, "OTEL_TRACES_EXPORTER", "none")
    assert got == ({k.strip().lower() for k in kinds} & {"otlp", "console"} if raw.strip() else frozenset())


def test_an_unknown_exporter_is_said(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert exporters({"X_EXPORTER": "zipkin,otlp"}, "X_EXPORTER", "none") == {"otlp"}
    assert "no such exporter (zipkin)" in caplog.text


@pytest.mark.slow  # a fresh interpreter replays a scenario
@pytest.mark.parametrize("encoding", ["ascii", "cp1252"])
def test_a_narrow_console_gets_the_verdict(encoding: str, tmp_path: Path) -> None:
    """Round 7: PYTHONIOENCODING=ascii (or a cp1252 console) turned a finished run into exit 2 'internal error'."""
    env = {**os.environ, "PYTHONIOENCODING": encoding, "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "MEMHARNESS_HISTORY": str(tmp_path / "h.sqlite")}
    done = subprocess.run([sys.executable, "-m", "harness", "run", str(SCENARIO), "--out", str(tmp_path / "out"),
                           "--no-gates"], capture_output=True, env=env, cwd=REPO, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert b"PASSED" in done.stdout
    assert b"internal error" not in done.stderr


def test_a_full_disk_names_the_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Round 7: 'memharness: No space left on device' named no file (a write()'s OSError carries none)."""
    from harness.reporting import _rundir

    def full(path: Path, write: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_rundir, "_put", full)
    monkeypatch.setattr(_rundir, "_in_place", lambda target, writers: full(target, writers))
    monkeypatch.setenv("MEMHARNESS_HISTORY", str(tmp_path / "h.sqlite"))
    out = tmp_path / "out"
    assert main(["run", str(SCENARIO), "--out", str(out), "--no-gates"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"memharness: {out}: No space left on device"
    target = tmp_path / "schema.json"
    monkeypatch.setattr(_rundir.os, "fsync", lambda fd: full(target, None))
    assert main(["schema", "--output", str(target)]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"memharness: {target}: No space left on device"


def test_out_of_memory_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import harness.cli._commands as commands

    def exhausted(args: object) -> int:
        raise MemoryError

    monkeypatch.setattr(commands, "cmd_validate", exhausted)
    assert main(["validate", str(SCENARIO)]) == 2
    assert capsys.readouterr().err == "memharness: out of memory (a memory limit is set lower than this command needs)\n"


@pytest.mark.parametrize("fail_at", [1, 2, 3, 4])
def test_an_init_that_cannot_finish_takes_back_what_it_wrote(fail_at: int, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Round 7: init on a full disk left 1-3 of its 4 files and a temp file, and a second init then refused."""
    import harness.cli._init as init

    calls = {"n": 0}
    real = os.fsync

    def fsync(fd: int) -> None:
        calls["n"] += 1
        if calls["n"] == fail_at:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd)

    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("mine", encoding="utf-8")
    monkeypatch.setattr(init.os, "fsync", fsync)
    assert main(["init", str(project)]) == 2
    line = capsys.readouterr().err.strip()
    assert line.startswith(f"memharness: {project}/"), line
    assert line.endswith(": No space left on device"), line
    assert sorted(p.name for p in project.rglob("*")) == ["notes.txt"]
    monkeypatch.setattr(init.os, "fsync", real)
    assert main(["init", str(project)]) == 0


def test_a_file_output_ending_in_a_slash_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Round 7: docs --output trail/ wrote a file named trail."""
    monkeypatch.chdir(tmp_path)
    for args in (["docs", "--output", "trail/"], ["schema", "-o", "trail/"]):
        assert main(args) == 2
        assert "expected a file, got 'trail/'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
