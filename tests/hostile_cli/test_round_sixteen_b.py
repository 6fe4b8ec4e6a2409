"""Round 16b (blind, generated): YAML mutated at the node level, hostile plug-ins, concurrent runs.

1. A tag written on a mapping key was dropped: ``!!binary dream: {force: true}``, ``!!python/name:os.system match:
   [...]``, ``!foo user: hi`` were read as the plain keys ``dream``, ``match``, ``user`` and the scenario was valid (a
   node-level mutation fuzzer of the shipped scenarios: 40 of 3,400 files accepted so). Tags on values were already
   read or refused; a key's tag was never looked at. Now a key with a tag (any but ``!!str``) is one located line,
   ``file:line: field: tag !!binary on a key (…)``.

Generated: Hypothesis picks a shipped scenario, one of its mapping keys at any depth and a tag (standard, python,
local ``!foo``, or a ``%TAG`` handle), and writes the key with that tag."""

from __future__ import annotations

import functools
import importlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.errors import ScenarioError
from harness.scenario import load_scenario
from harness.system import reference_factory
from tests.harness.conftest import SCENARIOS
from tests.helpers import examples
from tests.hostile_cli._support import LOCATED, assert_one_line_error, cli

SETTINGS = settings(max_examples=examples(60), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
SHIPPED = sorted(SCENARIOS.rglob("*.yaml"))
_STANDARD = ["int", "float", "bool", "null", "binary", "timestamp", "value", "yaml", "merge", "python/name:os.system",
             "python/object/apply:os.system", "python/tuple", "python/str"]
TAGS = st.one_of(st.sampled_from([f"tag:yaml.org,2002:{t}" for t in _STANDARD]),
                 st.from_regex(r"![a-z][a-z0-9]{0,8}", fullmatch=True),
                 st.from_regex(r"tag:example\.com,2026:[a-z]{1,8}", fullmatch=True))


def _keys(node: yaml.Node, out: list[yaml.ScalarNode]) -> list[yaml.ScalarNode]:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                out.append(key)
            _keys(value, out)
    elif isinstance(node, yaml.SequenceNode):
        for child in node.value:
            _keys(child, out)
    return out


@SETTINGS
@given(data=st.data(), tag=TAGS)
def test_a_tag_on_a_mapping_key_is_a_located_error(data: st.DataObject, tag: str, tmp_path: Path) -> None:
    source = data.draw(st.sampled_from(SHIPPED), label="scenario")
    root = yaml.compose(source.read_text(encoding="utf-8"))
    assert root is not None
    keys = _keys(root, [])
    index = data.draw(st.integers(0, len(keys) - 1), label="key")
    key = keys[index]
    key.tag = tag
    key.style = "'"  # quoted, so the serialiser always writes the tag
    path = tmp_path / "tagged.yaml"
    text = yaml.serialize(root, allow_unicode=True, width=10**6)
    path.write_text(text, encoding="utf-8")
    line = _keys(yaml.compose(text), [])[index].start_mark.line + 1  # where the tagged key is in the file written
    try:
        load_scenario(path)
    except ScenarioError as exc:
        message = str(exc)
    else:
        pytest.fail(f"accepted {tag} on key {key.value!r} (line {line} of the file made from {source.name})")
    match = LOCATED.match(f"memharness: {message}")
    assert match, message
    assert message.isprintable(), message
    assert int(match["line"]) == line, message  # the key's own line (its tag, or what it reads as)


# 2. A plug-in that replaced harness code in its process, and whose scenario run passed anyway, was left PASSED.
#
# ``_isolated._restore`` put the functions back after the run, but ``_blamed`` failed only a run that had errored: a
# system that swapped ``harness.errors.one_line`` (or a check of ``harness.replay._checks``) for a wrapper of its own
# passed, judged by code it had replaced, and the run said PASSED, exit 0 (docs/system-protocol.md: "that run fails
# as the system's failure naming what it replaced"). The hostile-plug-in generator found it with a replacement that
# behaves as the original: the replay met no error, so nothing was said. Now such a run fails, naming what it replaced.

HOSTILE_SCENARIO = SCENARIOS / "recall" / "multi-fact.yaml"  # seed, finish_seeding, recall, documents
CLEAN_SCENARIO = SCENARIOS / "forget" / "one-entry-of-many.yaml"  # replayed after it, in the same child process
OUTPUTS = ("summary.json", "summary.md", "results.jsonl", "probes.jsonl", "traces.jsonl", "junit.xml", "report.html")
PLAN: dict[str, Any] = {}
_TARGETS = {"harness.errors": ["one_line", "deepest_line"], "harness.scenario._limits": ["bad_char", "duration"],
            "harness.replay._checks": ["run_check", "hold_extractions"], "harness.system": ["system_name"],
            "builtins": ["len", "sorted", "isinstance"]}


def _same(original: Any, how: str) -> Any:
    """A replacement that behaves as ``original`` does (the replay cannot tell by any error)."""
    if how == "wrapper":
        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return original(*args, **kwargs)
        return wrapper
    if how == "partial":
        return functools.partial(original)
    return lambda *args, **kwargs: original(*args, **kwargs)


class _Patching:
    """The reference, replacing harness code in ``PLAN["call"]`` of the hostile scenario only (the one that seeds
    ``feedback/real-db.md``; the clean one replays after it in the same process)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._hostile = False

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._inner, name)
        if name not in (PLAN.get("call"), "seed") or not callable(real):
            return real

        def call(*args: Any, **kwargs: Any) -> Any:
            self._hostile = self._hostile or (name == "seed" and args[0].path == "feedback/real-db.md")
            for module_name, attr, how in PLAN["patch"] if self._hostile and name == PLAN["call"] else ():
                module = importlib.import_module(module_name)
                setattr(module, attr, _same(getattr(module, attr), how))
            return real(*args, **kwargs)
        return call


def patching_factory(workdir: Path, clock: Any, model: Any, events: Any) -> _Patching:
    return _Patching(reference_factory(workdir, clock, model, events))


_PATCH = st.sampled_from(sorted(_TARGETS)).flatmap(
    lambda m: st.tuples(st.just(m), st.sampled_from(_TARGETS[m]), st.sampled_from(["wrapper", "partial", "lambda"])))


@settings(max_examples=examples(6), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(call=st.sampled_from(["seed", "finish_seeding", "recall", "documents"]),
       patch=st.lists(_PATCH, min_size=1, max_size=3, unique_by=lambda p: p[:2]))
def test_a_system_that_replaced_harness_code_fails_even_when_the_replay_passed(
        tmp_path: Path, call: str, patch: list[tuple[str, str, str]]) -> None:
    PLAN.clear()
    PLAN.update(call=call, patch=patch)
    out = tmp_path / f"run-{os.urandom(4).hex()}"
    code = main(["run", str(HOSTILE_SCENARIO), str(CLEAN_SCENARIO), "--system", f"{__name__}:patching_factory",
                 "--no-gates", "--out", str(out)], environ={})
    assert all((out / name).is_file() for name in OUTPUTS)
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines() if line]
    results = {r["scenario"].rsplit("/", 1)[-1]: r for r in rows}
    assert code == 1, results  # FAILED: the system's doing, never PASSED, never INCOMPLETE
    hostile = results["multi-fact"]
    assert not hostile["passed"], hostile
    assert not hostile["error"], hostile
    named = [f for f in hostile["failures"] if "replaced the harness's own" in f]
    assert named, hostile["failures"]
    assert all(f"{m}.{a}" in named[0] for m, a, _ in patch), named
    assert all("\n" not in f and f.isprintable() for f in hostile["failures"]), hostile["failures"]
    assert results["one-entry-of-many"]["passed"], results  # put back: the next run is judged by the harness's code


# 3. A line break TOML and JSON do not count, in a comment or a string, moved every line named after it.
#
# The gates file, a cassette shelf's ``sets.toml``, the mutant catalogue and ``cassette-meta.json`` found the line of
# a key with ``str.splitlines()``, which also breaks at U+2028, U+2029 and U+0085: TOML allows them in comments and
# strings, JSON in strings. ``# note<U+2028>…`` above a gate whose ``min`` is wrong named line 6 for line 4. Now lines
# are split at "\n" only (``harness.scenario._toml.file_lines``), as the parsers and editors count them.

_BREAKS = st.sampled_from(["\u2028", "\u2029", "\x85"])
_NOTE = st.lists(st.one_of(_BREAKS, st.sampled_from(["a", " ", "é", "\t", "#"])), max_size=8).map("".join)


@SETTINGS
@given(before=st.lists(st.tuples(_NOTE, st.booleans()), max_size=4), bad=st.sampled_from(
    [("min", '"high"'), ("max", "nan"), ("metric", "5"), ("colour", '"red"')]), crlf=st.booleans())
def test_a_gate_error_names_its_line_whatever_the_comments_hold(
        before: list[tuple[str, bool]], bad: tuple[str, str], crlf: bool, tmp_path: Path) -> None:
    from harness.evaluation._gates import GateFileError, load_gates

    lines: list[str] = []
    for note, as_gate in before:  # comments, and valid gates with comments, holding the breaks
        lines += [f"# {note}", "[[gate]]", f'metric = "recall.f1"  # {note}', f"min = 0.1 #{note}"] if as_gate \
            else [f"# {note}"]
    lines += ["[[gate]]", 'metric = "recall.precision"' if bad[0] != "metric" else "# no metric yet", f"{bad[0]} = {bad[1]}"]
    path = tmp_path / "gates.toml"
    path.write_bytes(("\r\n" if crlf else "\n").join(lines).encode("utf-8") + b"\n")
    with pytest.raises(GateFileError) as caught:
        load_gates(path)
    message = str(caught.value)
    match = LOCATED.match(f"memharness: {message}")
    assert match, message
    assert int(match["line"]) == len(lines), message  # the bad key is the last line written


@SETTINGS
@given(note=_NOTE, key=st.sampled_from(["model", "api_base", "timeout_scale"]), crlf=st.booleans())
def test_a_cassette_meta_error_names_its_line_whatever_the_strings_hold(
        note: str, key: str, crlf: bool, tmp_path: Path) -> None:
    from harness.errors import HarnessError
    from harness.replay._cassette import read_meta

    members = [f'  "runtime": {json.dumps(note, ensure_ascii=False)}',
               f'  "request": {json.dumps(note + "x", ensure_ascii=False)}', f'  "{key}": true']
    text = ("\r\n" if crlf else "\n").join(["{", ",\n".join(members).replace("\n", "\r\n" if crlf else "\n"), "}"])
    (tmp_path / "cassette-meta.json").write_text(text, encoding="utf-8", newline="")
    (tmp_path / "cassette.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(HarnessError) as caught:
        read_meta(tmp_path)
    message = str(caught.value)
    match = LOCATED.match(f"memharness: {message}")
    assert match, message
    assert int(match["line"]) == 4, message  # "{", runtime, request, then the key


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


def _plant(value: Any, path: tuple[Any, ...]) -> None:
    for step in path[:-1]:
        value = value[step]
    value[path[-1]] = _SENTINEL


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
        _plant(doc, data.draw(st.sampled_from(_int_paths(doc)), label="number"))
        lines = json.dumps(doc, indent=2, ensure_ascii=False).split("\n")
    else:
        rows = [json.loads(line) for line in text.split("\n") if line.strip()]
        candidates = [(i, p) for i, row in enumerate(rows) for p in _int_paths(row)]
        if not candidates:  # a file of no integers (none the run wrote)
            return
        at, path = data.draw(st.sampled_from(candidates), label="number")
        _plant(rows[at], path)
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
