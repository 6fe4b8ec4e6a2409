"""Hostile run directories and cassettes: FIFOs, devices, deep JSON, non-objects → one named line, no hang."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.replay import Cassette
from harness.replay._cassette import read_meta
from harness.reporting import read_run
from harness.reporting._rundir import read_jsonl


def test_fifo_and_device_run_files_do_not_hang(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    os.mkfifo(run / "summary.json")
    with pytest.raises(HarnessError, match=r"summary\.json:1: file: not a regular file \(a FIFO\)"):
        read_run(run)
    (run / "probes.jsonl").symlink_to("/dev/zero")
    with pytest.raises(HarnessError, match=r"probes\.jsonl:1: file: not a regular file \(a character device\)"):
        read_jsonl(run / "probes.jsonl")


@pytest.mark.parametrize(("text", "what"), [
    ("[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply"),
    ("[1, 2]\n", "expected a JSON object per line"),
    ('{"a": 1}\n{bad\n', ":2: invalid JSON"),
])
def test_hostile_jsonl(tmp_path: Path, text: str, what: str) -> None:
    path = tmp_path / "probes.jsonl"
    path.write_text(text)
    with pytest.raises(HarnessError) as err:
        read_jsonl(path)
    assert what in str(err.value)
    assert str(path) in str(err.value)


def test_hostile_cassettes(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "cassette.jsonl")
    with pytest.raises(HarnessError, match="not a regular file"):
        Cassette.open(tmp_path)
    (tmp_path / "cassette.jsonl").unlink()
    for text in ("[" * 100_000 + "]" * 100_000, '["key"]', '{"key": ["x"]}'):
        (tmp_path / "cassette.jsonl").write_text(text + "\n")
        with pytest.raises(HarnessError, match=r"cassette\.jsonl:1: [a-z]+: malformed cassette entry"):
            Cassette.open(tmp_path)
    (tmp_path / "cassette-meta.json").write_text("[" * 100_000)
    with pytest.raises(HarnessError, match=r"cassette-meta\.json"):
        read_meta(tmp_path)
