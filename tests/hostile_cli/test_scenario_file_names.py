"""Scenario files with generated names (hostile probe, round 12): ``validate`` and ``run`` agree on each. On the old
code a name that is not UTF-8 (``f\\xff.yaml``) passed ``validate`` (as tests/hostile_cli/test_files_and_cli.py
wants), and ``run`` replayed it, then ended in ``internal error: UnicodeEncodeError`` while writing the run
directory (none written: the replay lost). Now the result names the file escaped (``f\\xff.yaml``, as errors do),
the run is written and read back."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from tests.harness.conftest import SCENARIOS
from tests.hostile_cli._support import cli

SOURCE = (SCENARIOS / "recall" / "multi-fact.yaml").read_bytes()


def _names(count: int) -> list[bytes]:
    rng = random.Random(12)
    alphabet = [b"a", b"-", b"_", b" ", b".", b"\xc3\xa9", b"\xe4\xb8\xad", b"\xff", b"\x80", b"\xc3", b"\xed\xa0\x80",
                b"\t", b"#", b"%", b"'", b"\\"]
    return [b"".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 6))) + b".yaml" for _ in range(count)]


@pytest.mark.parametrize("name", _names(24), ids=lambda n: n.hex())
def test_validate_and_run_agree_on_a_file_name(tmp_path: Path, name: bytes, capsys: pytest.CaptureFixture[str]) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    with open(os.path.join(os.fsencode(suite), name), "wb") as handle:
        handle.write(SOURCE)
    checked = cli(["validate", str(suite)], capsys)
    out = tmp_path / "out"
    ran = cli(["run", str(suite), "--no-gates", "--strategy", "heuristic", "--system", "reference", "--out", str(out)],
              capsys)
    for o in (checked, ran):
        assert "internal error" not in o.err, o.err
    assert (checked.code, ran.code) == (0, 0), (checked.err, ran.err)
    assert cli(["report", str(out)], capsys).code == 0  # read back
