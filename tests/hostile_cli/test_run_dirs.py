"""Hostile run directories and cassettes: FIFOs, devices, deep JSON, non-objects → one named line, no hang."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import HarnessError
from harness.replay import Cassette
from harness.replay._cassette import read_meta
from harness.reporting import read_run
from harness.reporting._rundir import read_jsonl
from tests.helpers import examples


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
    ('{"a": 1}\n{bad\n', ":2: row: invalid JSON at column 2"),
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


_CASSETTE = Path(__file__).resolve().parents[2] / "scenarios" / "cassettes" / "smollm2-135m" / "cassette.jsonl"


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), kind=st.sampled_from(["duplicate", "surrogate", "both", "null"]))
def test_a_cassette_entry_json_reads_otherwise_than_it_says_is_a_located_error(
        tmp_path: Path, data: st.DataObject, kind: str) -> None:
    """Hostile probe, round 8: a member written twice (JSON keeps the last), a lone surrogate escape, an entry with
    both a response and an error, and a null where a string belongs were all accepted."""
    lines = _CASSETTE.read_text(encoding="utf-8").splitlines()
    n = data.draw(st.integers(0, len(lines) - 1))
    entry = json.loads(lines[n])
    text = json.dumps(entry, ensure_ascii=False)
    if kind == "duplicate":
        block = data.draw(st.sampled_from(["", "response"] if "response" in entry else [""]))
        name = data.draw(st.sampled_from(sorted(entry[block] if block else entry)))
        opener = '"response": {' if block else "{"
        assert opener in text
        text = text.replace(opener, opener + json.dumps(name) + ": 1, ", 1)
        field = "line"
    elif kind == "surrogate":
        text = text.replace('"model": "', '"model": "\\ud8' + data.draw(st.sampled_from("0123456789abcdef")) + "0", 1)
        field = "line"
    elif kind == "both":
        entry["error"] = {"reason": "timeout", "message": "m"}
        entry.setdefault("response", {"text": "", "model": "m", "input_tokens": 0, "output_tokens": 0,
                                      "latency_ms": 0})
        text, field = json.dumps(entry), "response"
    else:
        field = data.draw(st.sampled_from(["model", "purpose", "prompt_version", "scenario"]))
        entry[field] = None
        text = json.dumps(entry)
    lines[n] = text
    (tmp_path / "cassette.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(HarnessError, match=rf"cassette\.jsonl:{n + 1}: {field}: malformed cassette entry"):
        Cassette.open(tmp_path)
