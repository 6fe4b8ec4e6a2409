"""``memharness record`` whose run is refused before it begins (issue 33, found by a generated argv probe): the run's
one located line was followed by ``record: 0 new call(s) recorded into …``, a second line that read as if something
had been recorded. A refused run (exit 2, nothing recorded) now ends with its one line; a run that recorded calls
still says how many. What is refused is generated: a missing path, a FIFO, a directory, bytes that are not YAML, a
scenario with a wrong field."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import examples
from tests.hostile_cli._support import assert_one_line_error, cli


def _refused(root: Path, kind: str, name: str) -> Path:
    path = root / f"{name}.yaml"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "not_yaml":
        path.write_bytes(b"id: [unclosed\n")
    elif kind == "wrong_field":
        path.write_text(f"id: {name}\nsteps: [{{advance: 1h}}]\nbogus_{name}: 1\n", encoding="utf-8")
    elif kind == "empty_dir":
        path = root / name
        path.mkdir()
    return path  # "missing": not made


@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["missing", "fifo", "not_yaml", "wrong_field", "empty_dir"]),
       name=st.from_regex(r"[a-z][a-z0-9-]{0,12}", fullmatch=True),
       system=st.sampled_from([[], ["--system", "sqlite"]]))
def test_a_refused_run_is_the_records_one_line(tmp_path_factory: pytest.TempPathFactory,
                                               capsys: pytest.CaptureFixture[str], kind: str, name: str,
                                               system: list[str]) -> None:
    root = tmp_path_factory.mktemp("record")
    path = _refused(root, kind, name)
    o = cli(["record", str(path), "--model", "openai/local", "--cassettes", str(root / "set"),
             "--out", str(root / "run"), *system], capsys)
    assert_one_line_error(o, mentions=(str(path),), budget=30.0)
    assert not (root / "run").exists()
