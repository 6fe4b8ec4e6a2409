"""Round 16b (blind, generated): JSON the harness reads back — ``proxy.jsonl``, ``cassette.jsonl``, run files,
``--benchmark``, ``cassette-meta.json``, LoCoMo — with lines nested too deeply, numbers of thousands of digits and
other damage: each a located line, never an internal error, never read in silence."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from tests.harness.conftest import SCENARIOS
from tests.helpers import examples
from tests.hostile_cli._support import LOCATED, assert_one_line_error, cli, set_at

SETTINGS = settings(max_examples=examples(60), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
HOSTILE_SCENARIO = SCENARIOS / "recall" / "multi-fact.yaml"


# 4. A damaged ``proxy.jsonl`` line (a plug-in's own model calls, replayed by the model proxy), and a cassette line
#    holding an integer of thousands of digits.
#
# A line nested thousands deep ended ``ModelProxy`` in ``RecursionError`` and an integer of 5,000 digits in
# ``ValueError`` (``cassette.jsonl`` too: ``internal error: ValueError: Exceeds the limit (4300 digits)``); a status
# that is no HTTP status (``true``, ``-5``, ``10**22``), ``NaN``, a member written twice, an empty key and a request
# recorded on two lines (the last answered) were read in silence. Each is now ``proxy.jsonl:<line>: <field>:
# malformed proxy entry (…)`` (``harness/replay/_jsonl.py``).

def _proxy_line(n: int) -> dict[str, Any]:
    return {"key": f"{n:064x}", "endpoint": "chat/completions", "request": {"model": "m", "messages": []},
            "status": 200, "response": {"choices": [{"message": {"content": f"reply {n}"}}]}}


def _damage(kind: str, entry: dict[str, Any], size: int, first_key: str) -> str:
    text = json.dumps(entry)
    if kind == "deep":
        return text.replace('"m"', "[" * size + "]" * size, 1)
    if kind == "digits":
        return text.replace('"status": 200', f'"status": 2{"0" * size}', 1)
    if kind == "constant":
        return text.replace('"m"', ["NaN", "Infinity", "-Infinity"][size % 3], 1)
    if kind == "twice":
        return text[:-1] + f', "{["key", "status", "response", "request"][size % 4]}": 1}}'
    if kind == "status":
        return text.replace('"status": 200', f'"status": {[-5, 0, 99, 600, 10**22, "true", "false", "200.0"][size % 8]}')
    if kind == "empty":
        return json.dumps({**entry, ["key", "endpoint"][size % 2]: ""})
    return json.dumps({**entry, "key": first_key})  # "again": the request of line 1 recorded a second time


@SETTINGS
@given(lines=st.integers(1, 5), where=st.integers(0, 4), size=st.integers(1_000, 60_000), kind=st.sampled_from(
    ["deep", "digits", "constant", "twice", "status", "empty", "again"]), crlf=st.booleans())
def test_a_damaged_proxy_recording_line_is_a_located_error(
        lines: int, where: int, size: int, kind: str, crlf: bool, tmp_path: Path) -> None:
    from harness.errors import HarnessError
    from harness.replay._proxy import PROXY_FILE, ModelProxy

    entries = [_proxy_line(n) for n in range(lines + (kind == "again"))]
    at = max(where % len(entries), 1 if kind == "again" else 0)
    size = 20_000 + size if kind == "deep" else 4_300 + size % 2_000 if kind == "digits" else size
    text = [json.dumps(e) for e in entries]
    text[at] = _damage(kind, entries[at], size, entries[0]["key"])
    directory = tmp_path / f"set-{os.urandom(3).hex()}"
    directory.mkdir()
    (directory / PROXY_FILE).write_text(("\r\n" if crlf else "\n").join(text) + "\n", encoding="utf-8")
    with pytest.raises(HarnessError) as caught:
        ModelProxy(directory, "replay")
    message = str(caught.value)
    match = LOCATED.match(f"memharness: {message}")
    assert match, message
    assert match["file"].endswith(PROXY_FILE), message
    assert int(match["line"]) == at + 1, message
    assert len(message) < 600, message
    assert message.isprintable(), message


SHIPPED_CASSETTE = SCENARIOS / "cassettes" / "smollm2-135m" / "cassette.jsonl"


@SETTINGS
@given(line=st.integers(0, 9), digits=st.integers(4_301, 9_000), field=st.sampled_from(
    ["input_tokens", "output_tokens", "latency_ms", "step", "extra"]))
def test_a_cassette_line_holding_thousands_of_digits_is_a_located_error(
        line: int, digits: int, field: str, tmp_path: Path) -> None:
    from harness.errors import HarnessError
    from harness.replay._cassette import Cassette

    rows = SHIPPED_CASSETTE.read_text(encoding="utf-8").split("\n")[:10]
    entry = json.loads(rows[line])
    block = entry["response"] if field in ("input_tokens", "output_tokens", "latency_ms") else entry
    block[field] = 0
    rows[line] = json.dumps(entry).replace(f'"{field}": 0', f'"{field}": 1{"0" * (digits - 1)}')
    directory = tmp_path / f"set-{os.urandom(3).hex()}"
    directory.mkdir()
    (directory / "cassette.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(HarnessError) as caught:
        Cassette.open(directory)
    match = LOCATED.match(f"memharness: {caught.value}")
    assert match, str(caught.value)
    assert int(match["line"]) == line + 1, str(caught.value)


# 5. A whole-file JSON or a run file's row holding an integer of thousands of digits.
#
# ``json.loads`` raises ``ValueError`` (not ``JSONDecodeError``) for an integer of more digits than ``int()``
# converts (4,300): ``report`` of a run whose ``summary.json`` held one ended in ``internal error: ValueError``, a
# ``probes.jsonl`` row in ``not a memharness run file of this version`` naming no line, and a ``--benchmark`` file,
# ``cassette-meta.json`` and a LoCoMo file in internal errors. Each is now ``<file>:<line>: … (a number of thousands
# of digits …)`` (``harness.errors.unreadable_json``).

_SENTINEL = 987_654_321_987_654_321


def _int_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _int_paths(v, (*path, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _int_paths(v, (*path, i))]
    return [path] if type(value) is int else []


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run") / "run"
    assert main(["run", str(HOSTILE_SCENARIO), "--no-gates", "--out", str(out)], environ={}) == 0
    return out


@SETTINGS
@given(data=st.data(), name=st.sampled_from(["summary.json", "probes.jsonl", "results.jsonl", "traces.jsonl"]),
       digits=st.integers(4_301, 30_000))
def test_a_run_file_number_of_thousands_of_digits_is_a_located_error(
        data: st.DataObject, name: str, digits: int, small_run: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / f"run-{os.urandom(3).hex()}"
    shutil.copytree(small_run, run)
    text = (run / name).read_text(encoding="utf-8")
    if name.endswith(".json"):
        doc = json.loads(text)
        set_at(doc, data.draw(st.sampled_from(_int_paths(doc)), label="number"), _SENTINEL)
        lines = json.dumps(doc, indent=2, ensure_ascii=False).split("\n")
    else:
        rows = [json.loads(line) for line in text.split("\n") if line.strip()]
        candidates = [(i, p) for i, row in enumerate(rows) for p in _int_paths(row)]
        if not candidates:  # a file of no integers (none the run wrote)
            return
        at, path = data.draw(st.sampled_from(candidates), label="number")
        set_at(rows[at], path, _SENTINEL)
        lines = [json.dumps(row, ensure_ascii=False) for row in rows]
    line = next(n for n, row in enumerate(lines, 1) if str(_SENTINEL) in row)
    (run / name).write_text("\n".join(lines).replace(str(_SENTINEL), "1" + "0" * (digits - 1)) + "\n",
                            encoding="utf-8")
    outcome = cli(["report", str(run), "-o", str(tmp_path / "r.html")], capsys)
    assert_one_line_error(outcome, mentions=(f"{name}:{line}: ", "thousands of digits"), budget=20)


@SETTINGS
@given(kind=st.sampled_from(["benchmark", "cassette-meta", "locomo"]), digits=st.integers(4_301, 30_000),
       before=st.integers(0, 5))
def test_a_json_input_number_of_thousands_of_digits_is_a_located_error(
        kind: str, digits: int, before: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tmp_path = tmp_path / os.urandom(3).hex()  # one directory per example
    tmp_path.mkdir()
    big = "1" + "0" * (digits - 1)
    padding = "".join(f'  "pad{i}": {i},\n' for i in range(before))
    text = "{\n" + padding + f'  "number": {big}\n' + "}\n"
    if kind == "benchmark":
        (tmp_path / "bench.json").write_text(text, encoding="utf-8")
        args = ["run", str(HOSTILE_SCENARIO), "--no-gates", "--benchmark", str(tmp_path / "bench.json"),
                "--out", str(tmp_path / "out")]
        where = "bench.json"
    elif kind == "locomo":
        (tmp_path / "locomo.json").write_text("[" + text + "]", encoding="utf-8")
        args = ["import", "locomo", str(tmp_path / "locomo.json"), "--out", str(tmp_path / "out")]
        where = "locomo.json"
    else:
        shutil.copytree(SHIPPED_CASSETTE.parent, tmp_path / "set")
        (tmp_path / "set" / "cassette-meta.json").write_text(text, encoding="utf-8")
        args = ["run", str(HOSTILE_SCENARIO), "--no-gates", "--strategy", "model", "--cassettes",
                str(tmp_path / "set"), "--out", str(tmp_path / "out")]
        where = "cassette-meta.json"
    outcome = cli(args, capsys)
    assert_one_line_error(outcome, mentions=(f"{where}:{before + 2}: ", "thousands of digits"), budget=20)
