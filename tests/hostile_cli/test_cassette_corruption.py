"""Generated corrupt cassettes (Hypothesis): a copy of a shipped cassette set truncated at a random offset, with
random bytes flipped or inserted, a field replaced by a random JSON value, or an empty, megabyte or wrong-typed line
spliced in.

Properties: ``Cassette.open`` raises nothing but one located line (``<file>:<line>: <field>: malformed cassette
entry (…)`` — or the reader's ``<file>:<line>: file: …`` for bytes that are not UTF-8) naming a line the corruption
touched; what it accepts replays every entry as an answer or a ``ModelError``, never a KeyError or TypeError; and
``memharness run --cassettes DIR`` shows the same one line, exit 2, no traceback.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import HarnessError
from harness.replay import Cassette, CassetteModel
from memory_core.errors import ModelError
from memory_core.model import ModelRequest
from tests.helpers import examples
from tests.hostile_cli._support import assert_one_line_error, cli

REPO = Path(__file__).resolve().parents[2]
SHELF_SET = REPO / "scenarios" / "cassettes" / "smollm2-135m"
SCENARIO = REPO / "scenarios" / "recall" / "type-user.yaml"  # one model call, recorded in every set
LINES: list[bytes] = (SHELF_SET / "cassette.jsonl").read_bytes().split(b"\n")[:-1]
BASE_LINES: list[bytes] = LINES[:12]  # enough lines for a corruption to land mid-file; keeps each example fast
BASE: bytes = b"".join(line + b"\n" for line in BASE_LINES)
ORIGINAL: frozenset[bytes] = frozenset(LINES)
SETTINGS = settings(max_examples=examples(100), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
LOCATED = re.compile(r"(?P<file>.+?):(?P<line>\d+): (?P<field>[^:\n]+): (?P<what>[^\n]+)")
REQUEST = ModelRequest(purpose="auto-memory-recall", messages=(), schema={}, timeout_s=1.0, prompt_version="p")

JSON: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)
FIELDS = ["key", "model", "purpose", "prompt_version", "scenario", "step", "request", "response",
          "response.text", "response.model", "response.input_tokens", "response.output_tokens",
          "response.latency_ms", "response.cost_usd"]


def _write(directory: Path, data: bytes) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "cassette.jsonl"
    path.write_bytes(data)
    return path


def _check(directory: Path, data: bytes) -> str | None:
    """Load a corrupt copy: a located error naming a corrupted line, or entries that all replay. The error text."""
    path = _write(directory, data)
    try:
        cassette = Cassette.open(directory)
    except HarnessError as exc:
        message = str(exc)
        match = LOCATED.fullmatch(message)
        assert match is not None, message
        assert message.isprintable(), repr(message)
        assert match["file"] == str(path), message
        line = int(match["line"])
        lines = data.split(b"\n")
        assert 1 <= line <= len(lines), message
        assert lines[line - 1] not in ORIGINAL, f"{message} names an intact line"
        return message
    model = CassetteModel(cassette, "m")
    for entry in cassette.entries.values():
        with contextlib.suppress(ModelError):  # a recorded error, or an answer refused like a live one: a fallback
            model._replay(entry, REQUEST)
    return None


def _replace(data: bytes, index: int, field: str, value: Any, delete: bool) -> bytes:
    lines = data.split(b"\n")
    entry = json.loads(lines[index])
    block = entry
    *parents, name = field.split(".")
    for parent in parents:
        block = block[parent]
    if delete:
        block.pop(name, None)
    else:
        block[name] = value
    lines[index] = json.dumps(entry, ensure_ascii=False).encode()
    return b"\n".join(lines)


@pytest.fixture(scope="module")
def scratch() -> Any:
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


@SETTINGS
@given(st.integers(0, len(BASE)))
def test_a_truncated_cassette_is_a_located_error_or_whole_lines(scratch: Path, offset: int) -> None:
    message = _check(scratch / "trunc", BASE[:offset])
    last = BASE[:offset].split(b"\n")[-1]
    if last and last not in ORIGINAL:  # cut inside a line, not at its end
        assert message is not None, f"truncated at {offset} and accepted"
        line = BASE[:offset].count(b"\n") + 1
        assert f":{line}: " in message, message


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, len(BASE) - 1), st.integers(1, 255)), min_size=1, max_size=4))
def test_flipped_bytes_are_a_located_error_or_replay(scratch: Path, flips: list[tuple[int, int]]) -> None:
    data = bytearray(BASE)
    for offset, mask in flips:
        data[offset] ^= mask
    _check(scratch / "flip", bytes(data))


@SETTINGS
@given(st.integers(0, len(BASE)), st.binary(min_size=1, max_size=8))
def test_inserted_bytes_are_a_located_error_or_replay(scratch: Path, offset: int, junk: bytes) -> None:
    _check(scratch / "insert", BASE[:offset] + junk + BASE[offset:])


@SETTINGS
@given(st.integers(0, len(BASE_LINES) - 1), st.sampled_from(FIELDS), JSON, st.booleans())
def test_a_field_replaced_by_any_json_value_is_a_located_error_or_replays(
        scratch: Path, index: int, field: str, value: Any, delete: bool) -> None:
    data = _replace(BASE, index, field, value, delete)
    message = _check(scratch / "field", data)
    required = field in ("key", "response") or (field.startswith("response.") and field != "response.cost_usd")
    if delete and required:
        assert message is not None
        assert f":{index + 1}: {field}" in message, message


@SETTINGS
@given(st.integers(0, len(BASE_LINES)),
       st.one_of(st.sampled_from([b"", b" ", b"\t", b"\r"]),
                 JSON.map(lambda v: json.dumps(v).encode()),
                 st.tuples(st.binary(min_size=1, max_size=4), st.integers(1 << 20, 3 << 20)).map(
                     lambda t: (t[0] * (t[1] // len(t[0]) + 1))[:t[1]].replace(b"\n", b" "))))
def test_a_spliced_in_line_is_a_located_error(scratch: Path, index: int, line: bytes) -> None:
    lines = list(BASE_LINES)
    lines.insert(index, line)
    message = _check(scratch / "splice", b"".join(x + b"\n" for x in lines))
    assert message is not None, line[:80]
    assert f":{index + 1}: " in message, message


CLI_CORRUPTIONS = st.one_of(
    st.tuples(st.just("truncate"), st.integers(0, len(BASE_LINES) - 1), st.integers(1, 200)),
    st.tuples(st.just("not utf-8"), st.integers(0, len(BASE_LINES) - 1), st.sampled_from([b"\xff", b"\xc3(", b"\x80"])),
    st.tuples(st.just("empty"), st.integers(0, len(BASE_LINES) - 1), st.just(b"")),
    st.tuples(st.just("wrong type"), st.integers(0, len(BASE_LINES) - 1),
              st.sampled_from(["response.input_tokens", "response.text", "response", "key"])),
)


@settings(SETTINGS, max_examples=examples(25))
@given(CLI_CORRUPTIONS)
def test_memharness_run_names_the_cassette_line(capsys: pytest.CaptureFixture[str],
                                                corruption: tuple[str, int, Any]) -> None:
    kind, index, arg = corruption
    lines = list(LINES)
    if kind == "truncate":
        lines = [*lines[:index], lines[index][:max(1, len(lines[index]) - arg)]]
    elif kind == "not utf-8":
        lines[index] = lines[index][:40] + arg + lines[index][40:]
    elif kind == "empty":
        lines.insert(index, b"")
    else:
        lines[index] = _replace(lines[index], 0, arg, [1], False)
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "set"
        target.mkdir()
        shutil.copy(SHELF_SET / "cassette-meta.json", target)
        path = _write(target, b"".join(x + b"\n" for x in lines))
        outcome = cli(["run", str(SCENARIO), "--strategy", "model", "--cassettes", str(target), "--no-gates",
                       "--system", "reference", "--out", str(Path(tmp) / "out")], capsys)
        assert_one_line_error(outcome, mentions=(f"{path}:{index + 1}: ",), budget=5.0)
        assert not (Path(tmp) / "out").exists()
