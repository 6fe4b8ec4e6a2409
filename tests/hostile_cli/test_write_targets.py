"""Where a user names a file to write (``schema --output``, ``report --output``, ``docs``, …), ``atomic_write``
writes what a shell's ``>`` would reach, never replaces what is there with something else (issue 33): a symlink's
target is replaced and the link stays, a character device (``/dev/null``) or a FIFO with a reader gets the text and
stays what it was, a FIFO no one reads, a directory or a socket is one line naming the path (exit 2), never a hang.
Found when a probe's ``--output /dev/null`` replaced the machine's /dev/null with a regular file."""

from __future__ import annotations

import os
import socket
import stat
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.errors import HarnessError
from harness.reporting import atomic_write
from tests.helpers import examples

KINDS = ("missing", "file", "symlink", "dangling", "chardev", "fifo_read", "fifo_unread", "directory", "socket")


def _make(tmp: Path, kind: str) -> tuple[Path, Path | None]:
    """(the path to write, where the text should land or None: an error) for a target of ``kind``."""
    path = tmp / f"out-{kind}"
    real = tmp / f"real-{kind}"
    if kind == "missing":
        return path, path
    if kind == "file":
        path.write_text("old")
        return path, path
    if kind == "symlink":
        real.write_text("old")
        path.symlink_to(real)
        return path, real
    if kind == "dangling":
        path.symlink_to(real)
        return path, real
    if kind == "chardev":
        try:
            os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a null device of our own, never /dev/null
            os.close(os.open(path, os.O_WRONLY))  # a nodev mount refuses to open it
        except OSError:
            pytest.skip("cannot make a character device here (not root, or a nodev mount)")
        return path, None
    if kind in ("fifo_read", "fifo_unread"):
        os.mkfifo(path)
        return path, None
    if kind == "directory":
        path.mkdir()
        return path, None
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    sock.close()  # the socket file stays
    return path, None


def _drain(fifo: Path, got: list[bytes]) -> threading.Thread:
    def read() -> None:
        with open(fifo, "rb") as handle:
            got.append(handle.read())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(KINDS), text=st.text(max_size=300))
def test_atomic_write_keeps_what_the_path_is(tmp_path: Path, kind: str, text: str) -> None:
    sub = tmp_path / os.urandom(4).hex()
    sub.mkdir()
    path, lands = _make(sub, kind)
    before = os.lstat(path).st_mode if os.path.lexists(path) else None
    got: list[bytes] = []
    reader = _drain(path, got) if kind == "fifo_read" else None
    if kind in ("fifo_unread", "directory", "socket"):
        with pytest.raises(HarnessError) as raised:
            atomic_write(path, text)
        assert str(raised.value).startswith(f"{path}: "), raised.value
    else:
        atomic_write(path, text)
    if reader is not None:
        reader.join(10)
        assert b"".join(got) == text.encode("utf-8", "surrogatepass")
    if before is not None:
        assert stat.S_IFMT(os.lstat(path).st_mode) == stat.S_IFMT(before)  # a link stays a link, a device a device
    if lands is not None:
        assert lands.read_bytes() == text.encode("utf-8", "surrogatepass")
    assert not [p.name for p in sub.iterdir() if p.name.startswith(".tmp-")]  # no temp file left behind


@pytest.mark.parametrize("kind", ["fifo_unread", "directory", "socket"])
def test_a_target_that_cannot_take_a_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      kind: str) -> None:
    path, _ = _make(tmp_path, kind)
    code = main(["schema", "--output", str(path)], environ={})
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1, err
    assert str(path) in err, err


@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=st.text(max_size=50), text=st.text(max_size=200))
def test_a_file_named_through_a_descriptor_is_appended_to(tmp_path: Path, before: str, text: str) -> None:
    """`-o /dev/stdout >> log`: the log keeps what it held (replacing the file the descriptor names lost it)."""
    log = tmp_path / f"log-{os.urandom(4).hex()}"
    log.write_text(before, encoding="utf-8")
    inode = log.stat().st_ino
    with open(log, "ab") as handle:
        atomic_write(Path(f"/dev/fd/{handle.fileno()}"), text)
    assert log.read_bytes() == (before + text).encode("utf-8", "surrogatepass")
    assert log.stat().st_ino == inode


@pytest.mark.parametrize("spelling", ["/dev/stdout", "//dev/./stdout", "link", "/dev/fd/1", "/proc/self/fd/1"])
@pytest.mark.parametrize("mode", ["w", "a"])
def test_output_to_stdout_keeps_the_shells_file_whole(tmp_path: Path, spelling: str, mode: str) -> None:
    """`memharness schema -o /dev/stdout > f` (or `>> log`, or through a symlink to /dev/stdout): the text goes
    through the harness's own descriptor at its offset, and 'wrote …' to stderr (the review found the file
    overwritten at its start, then a symlink to /dev/stdout replacing the log)."""
    import json
    import subprocess
    import sys

    if spelling == "link":
        (tmp_path / "link").symlink_to("/dev/stdout")
        spelling = str(tmp_path / "link")
    log = tmp_path / "log"
    log.write_text("KEEP\n" if mode == "a" else "", encoding="utf-8")
    with open(log, mode, encoding="utf-8") as out:
        done = subprocess.run([sys.executable, "-m", "harness", "schema", "--output", spelling], stdout=out,
                              stderr=subprocess.PIPE, text=True, timeout=60, check=False,
                              env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    assert done.returncode == 0, done.stderr
    assert "wrote " in done.stderr
    text = log.read_text(encoding="utf-8")
    if mode == "a":
        assert text.startswith("KEEP\n")
        text = text.removeprefix("KEEP\n")
    assert json.loads(text)["$schema"].startswith("https://json-schema.org/")
