"""Hostile paths and arguments: non-regular files, empty or unlistable directories, odd names, bad --out."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile_cli._support import STEP, assert_one_line_error, cli

REPO = Path(__file__).resolve().parents[2]


def test_fifo_named_yaml_does_not_hang(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "x.yaml"
    os.mkfifo(fifo)
    assert_one_line_error(cli(["validate", str(fifo)], capsys), mentions=(str(fifo), ":1: file: not a regular file",
                                                                          "FIFO"))
    suite = tmp_path  # the same FIFO found while walking a suite directory is an error too, not skipped
    assert_one_line_error(cli(["validate", str(suite)], capsys), mentions=(str(fifo), "FIFO"))


@pytest.mark.parametrize("target", ["/dev/zero", "/dev/null", "/dev/urandom"])
def test_symlink_to_device(tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str) -> None:
    link = tmp_path / "x.yaml"
    link.symlink_to(target)
    assert_one_line_error(cli(["validate", str(link)], capsys), mentions=(str(link), "file: not a regular file",
                                                                          "character device"))


def test_device_given_directly(capsys: pytest.CaptureFixture[str]) -> None:
    assert_one_line_error(cli(["validate", "/dev/zero"], capsys), mentions=("/dev/zero", "not a regular file"))


def test_dangling_symlink(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    link = tmp_path / "x.yaml"
    link.symlink_to(tmp_path / "gone.yaml")
    assert_one_line_error(cli(["validate", str(link)], capsys), mentions=(str(link), "file: cannot be opened"))


@pytest.mark.parametrize("layout", ["empty", "directory-named-yaml", "only-other-files", "only-cassettes"])
def test_path_with_no_scenario_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], layout: str) -> None:
    target = tmp_path / "suite"
    target.mkdir()
    if layout == "directory-named-yaml":
        target = tmp_path / "x.yaml"
        target.mkdir()
    elif layout == "only-other-files":
        (target / "notes.txt").write_text("steps: []\n")
        (target / "README.md").write_text("# hi\n")
    elif layout == "only-cassettes":
        (target / "cassettes").mkdir()
        (target / "cassettes" / "c.yaml").write_text(STEP)
    for command in (["validate", str(target)], ["run", str(target), "--out", str(tmp_path / "out")]):
        assert_one_line_error(cli(command, capsys), mentions=(str(target), "no scenario file"))
    assert not (tmp_path / "out").exists()


def test_unlistable_subdirectory_is_an_error_not_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """chmod 000 does not stop root: simulate the kernel's refusal at the one call that lists a directory."""
    (tmp_path / "ok.yaml").write_text(STEP)
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "hidden.yaml").write_text(STEP)
    real = os.scandir

    def scandir(path: object = ".") -> object:
        if Path(str(path)) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)  # type: ignore[call-overload]

    monkeypatch.setattr(os, "scandir", scandir)
    assert_one_line_error(cli(["validate", str(tmp_path)], capsys),
                          mentions=(str(locked), "cannot list the directory", "Permission denied"))


def test_unreadable_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(STEP)
    real = os.open

    def refuse(p: object, flags: int, *args: object, **kwargs: object) -> int:
        if Path(str(p)) == path:
            raise PermissionError(13, "Permission denied", str(p))
        return real(p, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", refuse)
    assert_one_line_error(cli(["validate", str(path)], capsys),
                          mentions=(str(path), ":1: file: cannot be opened (Permission denied)"))


def test_non_utf8_content_names_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "x.yaml"
    path.write_bytes(b"description: ok\nsteps: [{advance: 1h}]\ntags: [\xff]\n")
    assert_one_line_error(cli(["validate", str(path)], capsys), mentions=(str(path), ":3: file: cannot be read"))


def test_non_utf8_file_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = os.fsencode(tmp_path) + b"/bad-\xff\x1b.yaml"
    with open(raw, "wb") as handle:
        handle.write(b"steps: nope\n")
    o = cli(["validate", os.fsdecode(raw)], capsys)
    assert_one_line_error(o, mentions=("bad-\\xff\\x1b.yaml:1: steps: expected a list",))
    with open(raw, "wb") as handle:  # a valid scenario with that name: its default id must be printable too
        handle.write(STEP.encode())
    o = cli(["validate", str(tmp_path)], capsys)
    assert o.code == 0, o.err


@pytest.mark.parametrize("arg", ["\udcff.yaml", "a\udcff/\udcfe", "\ud800", "x\ny.yaml"])
def test_lone_surrogates_and_newlines_in_arguments(capsys: pytest.CaptureFixture[str], arg: str) -> None:
    assert_one_line_error(cli(["validate", arg], capsys), mentions=("path: no such file",))
    assert_one_line_error(cli(["run", "--strategy", arg, "--out", "/nonexistent-dir/x", arg], capsys), mentions=())


def test_out_that_is_a_file_or_below_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(STEP)
    afile = tmp_path / "afile"
    afile.write_text("x")
    for out in (afile, afile / "sub" / "dir"):
        assert_one_line_error(cli(["run", str(scenario), "--out", str(out)], capsys),
                              mentions=(str(out), "--out", "is not a directory"))
        assert afile.read_text() == "x"


def test_unwritable_out(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(STEP)
    locked = tmp_path / "locked"
    locked.mkdir()
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) == locked else real(p, mode, **kw))
    assert_one_line_error(cli(["run", str(scenario), "--out", str(locked / "run")], capsys),
                          mentions=("--out", "is not writable"))


def test_os_error_during_a_command_is_one_named_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "summary.json").mkdir()  # a directory where a file must be
    # the budget covers importing the reporting stage (pandas, jinja2) on a loaded CI machine
    assert_one_line_error(cli(["report", str(run_dir)], capsys), mentions=("summary.json",), budget=60)


def test_real_process_prints_no_traceback(tmp_path: Path) -> None:
    """The installed entry point end to end: a hostile file gives one line on stderr, exit 2, no traceback."""
    bad = tmp_path / "x.yaml"
    bad.write_text("clock: 9999-12-31T23:59:59Z\n" + STEP)
    env = {**os.environ, "MEMHARNESS_DEBUG": ""}
    proc = subprocess.run([sys.executable, "-m", "harness", "validate", str(bad)], capture_output=True, text=True,
                          timeout=60, cwd=REPO, env=env, check=False)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert f"{bad}:1: clock:" in proc.stderr
