"""The sixth blind probe's finds outside the plug-in path (issue 33), each pinned by generated inputs of its class:
the GitHub comment reads its files without blocking and names bad bytes; a fuzz floor outside 0..1 is a usage
error; `cassettes status` of a set that is not there is an error; a gate's name is one printable line and a
near-miss system name is refused with the name it meant."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.errors import HarnessError
from harness.evaluation import load_gates
from harness.tools._github import comment_body, pull_number
from tests.helpers import examples

SETTINGS = settings(max_examples=examples(30), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def _one_line_error(capsys: pytest.CaptureFixture[str], code: int) -> str:
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


@SETTINGS
@given(kind=st.sampled_from(["fifo", "directory", "dev_zero", "not_utf8", "missing"]), which=st.booleans(),
       junk=st.binary(max_size=40).map(lambda b: b"\xff" + b))  # 0xff is never UTF-8
def test_the_github_comment_never_blocks_on_its_files(tmp_path: Path, kind: str, which: bool, junk: bytes) -> None:
    sub = tmp_path / os.urandom(4).hex()
    sub.mkdir()
    target = sub / ("summary.md" if which else "event.json")
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "directory":
        target.mkdir()
    elif kind == "dev_zero":
        target.symlink_to("/dev/zero")
    elif kind == "not_utf8":
        target.write_bytes(b"ok\n" + junk)
    with pytest.raises(HarnessError) as raised:
        comment_body(sub) if which else pull_number(target)
    message = str(raised.value)
    assert str(target) in message, message
    assert "\n" not in message
    if kind == "not_utf8":
        assert ":2: file: cannot be read (not UTF-8: byte 0xff)" in message, message


@SETTINGS
@given(value=st.one_of(st.floats(allow_nan=True, allow_infinity=True).filter(lambda v: not 0 <= v <= 1),
                       st.sampled_from(["nan", "inf", "-inf", "1e999", "x", ""])),
       flag=st.sampled_from(["--min-recall", "--min-precision"]))
def test_a_fuzz_floor_outside_0_to_1_is_refused(capsys: pytest.CaptureFixture[str], value: object, flag: str) -> None:
    err = _one_line_error(capsys, main(["fuzz", f"{flag}={value}", "--max-examples", "1"], environ={}))
    assert f"argument {flag}: expected a floor from 0 to 1" in err, err


@SETTINGS
@given(kind=st.sampled_from(["missing", "file", "below_file"]))
def test_cassettes_status_of_nothing_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    sub = tmp_path / os.urandom(4).hex()
    sub.mkdir()
    (sub / "afile.txt").write_text("x")
    target = {"missing": sub / "nope", "file": sub / "afile.txt", "below_file": sub / "afile.txt" / "sub"}[kind]
    err = _one_line_error(capsys, main(["cassettes", "status", str(target)], environ={}))
    assert str(target) in err, err
    shutil.rmtree(sub)


@SETTINGS
@given(name=st.text(min_size=1, max_size=30).filter(lambda t: any(ord(c) < 32 or 127 <= ord(c) < 160 or c in "\u2028\u2029"
                                                                  for c in t)))
def test_a_gate_name_is_one_printable_line(tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{os.urandom(4).hex()}.toml"
    quoted = "".join(f"\\u{ord(c):04x}" if ord(c) < 0x20 or ord(c) == 0x7F or c in '"\\' else c for c in name)
    path.write_text(f'[[gate]]\nmetric = "recall.f1"\nmin = 0.1\nname = "{quoted}"\n', encoding="utf-8")
    with pytest.raises(HarnessError, match="'name' holds a control character or line break") as raised:
        load_gates(path)
    assert "\n" not in str(raised.value)
    assert "\x1b" not in str(raised.value)


@pytest.mark.parametrize(("system", "meant"), [("refernce", "reference"), ("referense", "reference"),
                                               ("sqlite2", None), ("mem0", None)])
def test_a_gate_for_a_system_not_in_the_run_is_skipped_saying_what_it_may_have_meant(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], system: str, meant: str | None) -> None:
    """A gate's `system` naming no system of the run is skipped, never an error (a gates file serves runs of other
    systems too, and a plug-in may be called `sqlite2`), and a near miss says which name of the run it may mean
    (the sixth blind probe: 'sqllite' skipped the gate without a word about the typo)."""
    gates = tmp_path / "gates.toml"
    gates.write_text(f'[[gate]]\nmetric = "recall.f1"\nmin = 2.0\nsystem = "{system}"\n', encoding="utf-8")
    assert load_gates(gates)[0].system == system
    code = main(["run", str(Path(__file__).resolve().parents[2] / "scenarios" / "recall" / "multi-fact.yaml"),
                 "--gates", str(gates), "--out", str(tmp_path / "out")], environ={})
    out = capsys.readouterr().out
    assert code == 0, out
    summary = (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
    assert f"for system {system}" in summary
    assert (f"did you mean '{meant}'?" in summary) == (meant is not None), summary


@SETTINGS
@given(meta=st.one_of(
    st.integers() | st.text(max_size=5) | st.lists(st.integers(), max_size=2) | st.none() | st.booleans(),
    st.fixed_dictionaries({"model": st.integers() | st.lists(st.text(max_size=3), max_size=2) | st.booleans()}),
    st.fixed_dictionaries({"model": st.just("m"), "timeout_scale": st.one_of(
        st.integers(max_value=0), st.text(max_size=3), st.booleans(), st.floats(min_value=1e6))}),
))
def test_a_cassette_meta_of_the_wrong_shape_is_located(tmp_path: Path, meta: object) -> None:
    """Found by the sixth blind probe: a cassette-meta.json holding 5 read as 'no cassette-meta.json', and
    "model": 5 became the model "5"."""
    import json

    from harness.replay import read_meta

    sub = tmp_path / os.urandom(4).hex()
    sub.mkdir()
    (sub / "cassette-meta.json").write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(HarnessError) as raised:
        read_meta(sub)
    assert str(sub / "cassette-meta.json") in str(raised.value)
    assert "\n" not in str(raised.value)


@SETTINGS
@given(line=st.integers(1, 3), value=st.one_of(st.integers(), st.text(max_size=4), st.dictionaries(
    st.sampled_from(["x", "spans"]), st.integers(), min_size=1, max_size=2)))
def test_traces_push_names_the_line_that_is_not_otlp(tmp_path: Path, capsys: pytest.CaptureFixture[str], line: int,
                                                     value: object) -> None:
    """Found by the sixth blind probe: the parse error named the file, not the line."""
    import json

    run = tmp_path / os.urandom(4).hex()
    run.mkdir()
    good = {"resourceSpans": []}
    rows = [good, good, good]
    rows[line - 1] = {"resourceSpans": value}
    (run / "traces.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    err = _one_line_error(capsys, main(["traces", "push", str(run), "--endpoint", "http://127.0.0.1:9"], environ={}))
    assert re.match(rf"memharness: {re.escape(str(run / 'traces.jsonl'))}:{line}: resourceSpans\S*: ", err), err


@SETTINGS
@given(kind=st.sampled_from(["directory", "fifo", "bytes"]), junk=st.binary(min_size=1, max_size=200))
def test_history_of_something_that_is_no_history_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             kind: str, junk: bytes) -> None:
    """Found by the sixth blind probe: `history --db /` printed '0 run(s)' and exited 0."""
    db = tmp_path / f"{os.urandom(4).hex()}.sqlite"
    if kind == "directory":
        db.mkdir()
    elif kind == "fifo":
        os.mkfifo(db)
    else:
        db.write_bytes(b"not sqlite " + junk)
    err = _one_line_error(capsys, main(["history", "--db", str(db)], environ={}))
    assert str(db) in err, err


def test_fuzz_without_a_database_writes_nothing_into_the_current_directory(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by the sixth blind probe: `memharness fuzz` left Hypothesis's `.hypothesis/` in the current directory;
    the caller's Hypothesis home (here pytest's) is restored after."""
    from hypothesis import configuration

    before = vars(configuration).get("__hypothesis_home_directory")
    monkeypatch.chdir(tmp_path)
    code = main(["fuzz", "--max-examples", "2", "--property", "recall-bounded", "--regressions",
                 str(tmp_path / "reg")], environ={})
    assert code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    assert vars(configuration).get("__hypothesis_home_directory") == before
