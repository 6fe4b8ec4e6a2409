""""wrote PATH" says a path with a control character in it as its escape (round 20).

A generated argv probe wrote ``schema -o $'\\x1b[31mred'``: the file was written where asked (a name may hold any byte
but ``/`` and NUL), and the terminal was sent the raw ESC sequence back in "wrote …". Every error already names a
path through ``one_line``; the "wrote" lines of ``schema``, ``report``, ``run``, ``merge``, ``import``, ``bench``,
``sensitivity`` and ``init`` now do too.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.harness.conftest import SCENARIOS
from tests.helpers import examples
from tests.hostile_cli._support import cli, quiet_run

SETTINGS = settings(max_examples=examples(30), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
RAW: re.Pattern[str] = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
CONTROL = st.sampled_from(["\x1b[31m", "\x07", "\x7f", "\x9b", "\u2028", "\u202e", "\r", "\x08", "\x1b]0;t\x07"])
NAME = st.tuples(st.text("abc", max_size=3), CONTROL, st.text("xyz", min_size=1, max_size=3)).map("".join)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return quiet_run(tmp_path_factory.mktemp("run") / "run")


@SETTINGS
@given(name=NAME, command=st.sampled_from(["schema", "report"]))
def test_a_written_file_is_named_by_its_escape(name: str, command: str, run: Path, tmp_path_factory:
                                               pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path_factory.mktemp("out") / name
    args = ["schema", "-o", str(target)] if command == "schema" else ["report", str(run), "-o", str(target)]
    o = cli(args, capsys)
    assert o.code == 0, o.err
    assert target.is_file()  # written where asked
    assert not RAW.search(o.out + o.err), repr(o.out + o.err)
    assert o.out.startswith("wrote "), o.out


def test_a_run_directory_is_named_by_its_escape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run\x1b[2Jx"
    o = cli(["run", str(SCENARIOS / "recall" / "multi-fact.yaml"), "--no-gates", "--out", str(out)], capsys)
    assert o.code == 0, o.err
    assert (out / "report.html").is_file()
    assert not RAW.search(o.out + o.err), repr(o.out[-300:] + o.err)
    assert os.fsencode(str(out)) in os.fsencode(str(next(tmp_path.iterdir())))
