"""Round 15b (generated): scenario file bytes, stores that vanish, the command line.

1. A scenario file saved as UTF-16 or UTF-32 was ``not UTF-8: byte 0xff`` on line 1 with a byte-order mark, and
   without one (ASCII text: every byte pair decodes as UTF-8) YAML's ``unacceptable character #x0000``: neither
   said the file was UTF-16. Now ``file: cannot be read (not UTF-8: the file is UTF-16-LE, …); save it as UTF-8``.
   A bad byte is named with its line, its column and what it is (a stray continuation byte, an overlong form, an
   encoded surrogate, past U+10FFFF, a character cut short); a NUL byte in UTF-8 text is named as such.

Generated: Hypothesis writes a valid scenario of random text, saves it in a random encoding or plants a random kind
of bad byte sequence at a random place, and checks the one line ``validate`` prints."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import examples
from tests.hostile_cli._support import assert_one_line_error, cli

SETTINGS = settings(max_examples=examples(40), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# text a comment or a quoted value can hold: printable, no quote or backslash, any plane
_TEXT = st.text(st.characters(codec="utf-8", categories=("L", "N", "Zs", "S"), exclude_characters='"\\'),
                max_size=30)


@st.composite
def scenario_lines(draw: st.DrawFn) -> list[str]:
    """A valid scenario (it starts with an ASCII key, as every scenario does), with random text in its values and
    comments."""
    lines = [f'description: "{draw(_TEXT)}x"', "tags: [a]", "steps:"]
    for _ in range(draw(st.integers(1, 6))):
        lines.append(f"  - advance: {draw(st.integers(1, 50))}m   # {draw(_TEXT)}")
    return lines


ENCODINGS = {"utf-16": "UTF-16-LE", "utf-16-le": "UTF-16-LE", "utf-16-be": "UTF-16-BE", "utf-32": "UTF-32-LE",
             "utf-32-le": "UTF-32-LE", "utf-32-be": "UTF-32-BE"}


@SETTINGS
@given(lines=scenario_lines(), codec=st.sampled_from(sorted(ENCODINGS)), bom=st.booleans(),
       end=st.sampled_from(["\n", "\r\n"]))
def test_utf16_and_utf32_files_are_named(lines: list[str], codec: str, bom: bool, end: str,
                                         tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "s.yaml"
    text = end.join(lines) + end
    source.write_text(text, encoding="utf-8", newline="")
    assert cli(["validate", str(source)], capsys).code == 0  # the scenario is valid as UTF-8
    explicit = codec in ("utf-16", "utf-32")  # Python's own writes a byte-order mark
    data = ("\ufeff" + text if bom and not explicit else text).encode(codec)
    source.write_bytes(data)
    says = "its byte-order mark says so" if bom or explicit else "its NUL bytes say so"
    o = cli(["validate", str(source)], capsys)
    assert_one_line_error(o, mentions=(f"{source}:1: file: cannot be read (not UTF-8: the file is {ENCODINGS[codec]}, "
                                       f"{says}); save it as UTF-8",), budget=10.0)


# each kind of sequence that is not UTF-8, and the words that name it
BAD = {
    "continuation": (st.integers(0x80, 0xBF).map(lambda b: bytes([b])), "a continuation byte with no lead byte"),
    "overlong": (st.one_of(st.tuples(st.sampled_from([0xC0, 0xC1]), st.integers(0x80, 0xBF)),
                           st.tuples(st.just(0xE0), st.integers(0x80, 0x9F), st.integers(0x80, 0xBF)),
                           st.tuples(st.just(0xF0), st.integers(0x80, 0x8F), st.integers(0x80, 0xBF),
                                     st.integers(0x80, 0xBF))).map(bytes), "an overlong form"),
    "surrogate": (st.integers(0xD800, 0xDFFF).map(lambda c: chr(c).encode("utf-8", "surrogatepass")),
                  "an encoded UTF-16 surrogate"),
    "past-max": (st.one_of(st.integers(0x110000, 0x13FFFF).map(
        lambda c: bytes([0xF0 | c >> 18, 0x80 | (c >> 12) & 0x3F, 0x80 | (c >> 6) & 0x3F, 0x80 | c & 0x3F])),
        st.integers(0xF5, 0xF7).map(lambda b: bytes([b, 0x80, 0x80, 0x80]))), "past U+10FFFF"),
    "never": (st.sampled_from([b"\xf8", b"\xfc", b"\xfe", b"\xff"]), "a byte no UTF-8 text holds"),
    "latin-1": (st.text(st.characters(min_codepoint=0xC0, max_codepoint=0xFF), min_size=1, max_size=4).map(
        lambda t: t.encode("latin-1") + b"x"), "(Latin-1 or Windows-1252 text?)"),
    "nul": (st.just(b"\x00"), "a NUL byte"),
}


@SETTINGS
@given(lines=scenario_lines(), kind=st.sampled_from(sorted(BAD)), data=st.data())
def test_a_bad_byte_is_named_with_its_line_column_and_kind(lines: list[str], kind: str, data: st.DataObject,
                                                           tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad, words = BAD[kind]
    row = data.draw(st.integers(3, len(lines) - 1), label="line")  # a line with a comment
    line = lines[row]
    at = data.draw(st.integers(line.index("#") + 1, len(line)), label="column")
    planted = line[:at].encode("utf-8") + data.draw(bad, label="bytes") + line[at:].encode("utf-8")
    source = tmp_path / "s.yaml"
    source.write_bytes(b"".join((planted if n == row else text.encode("utf-8")) + b"\n" for n, text in enumerate(lines)))
    o = cli(["validate", str(source)], capsys)
    column = f"column {at + 1}: " if kind != "nul" else f"column {at + 1}: no text"
    assert_one_line_error(o, mentions=(f"{source}:{row + 1}: file: cannot be read (", words, column), budget=10.0)


# 2. A shipped system's store that vanishes while a scenario runs ------------------------------------------------------

VANISH_SCENARIO = """\
description: a store that vanishes while the scenario runs
tags: [vanish]
clock: 2026-03-02T09:00:00Z
facts:
  editor: {type: user, match: ["helix"]}
  tests: {type: feedback, match: ["real database"]}
memories:
  - {path: user/editor.md, name: editor, type: user, body: "Edits in helix", facts: [editor], age: 1d}
  - {path: feedback/tests.md, name: tests, type: feedback, body: "Tests hit a real database", facts: [tests], age: 2d}
steps:
  - recall: {query: "which editor, helix?", expect: [editor]}
  - session: s1
    turns: [{user: "remember: always run the linter before committing"}]
  - recall: {query: "tests against a real database", expect: [tests]}
  - forget: {query: "forget helix", expect_removed: [editor]}
  - dream: {force: true}
  - check: {facts_present: [tests]}
"""
OPERATIONS = ("recall", "extract", "forget", "dream")
OUTPUTS = ("summary.json", "summary.md", "results.jsonl", "probes.jsonl", "traces.jsonl", "junit.xml", "report.html")


def _vanish(path: Path, how: str) -> None:
    """``path`` (a directory or a file) gone, or replaced by ``how``."""
    import os
    import shutil

    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
    if how == "file":
        path.write_text("not a store\n")
    elif how == "symlink":
        path.symlink_to(path.parent / "elsewhere")
    elif how == "fifo":
        os.mkfifo(path)
    elif how == "again":  # made again, empty: the same kind at the same path, another inode
        if path.name.endswith(".db"):
            path.write_bytes(b"")
        else:
            path.mkdir()


@settings(max_examples=examples(30), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(system=st.sampled_from(["reference", "sqlite"]), how=st.sampled_from(["deleted", "file", "symlink", "fifo", "again"]),
       nth=st.integers(0, 4), after=st.booleans())
def test_a_store_that_vanishes_is_a_named_failure_and_the_run_goes_on(
        system: str, how: str, nth: int, after: bool, tmp_path_factory: pytest.TempPathFactory,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``nth`` operation call (recall, extract, forget, dream) finds the store gone — or it goes right after that
    call returns. The step it fails at names the store and what became of it; the run writes every output, exit 1
    (the system failed), never a traceback or an INCOMPLETE run; no step passes on an empty store in silence."""
    import json

    from harness.systems import files, sqlite

    tmp = tmp_path_factory.mktemp("vanish")
    cls, store, what = (files.ReferenceSystem, lambda s: s.root, "memory store project/.qwen/memory") \
        if system == "reference" else (sqlite.SqliteSystem, lambda s: s.watch.known[0][0], "memory database openakita.db")
    calls = [0]
    gone: list[str] = []

    def wrap(name: str) -> None:
        inner = getattr(cls, name)

        def call(self: object, *args: object, **kwargs: object) -> object:
            calls[0] += 1
            hit = calls[0] - 1 == nth and not gone
            if hit and not after:
                _vanish(store(self), how)
                gone.append(name)
            result = inner(self, *args, **kwargs)
            if hit and after:
                _vanish(store(self), how)
                gone.append(name)
            return result
        monkeypatch.setattr(cls, name, call)

    for name in OPERATIONS:
        wrap(name)
    source = tmp / "vanish.yaml"
    source.write_text(VANISH_SCENARIO)
    out = tmp / "out"
    o = cli(["run", str(source), "--system", system, "--strategy", "heuristic", "--out", str(out)], capsys)
    assert "Traceback" not in o.err, o.err
    assert "internal error" not in o.err, o.err
    assert gone, calls  # the scenario calls at least nth + 1 operations
    assert o.code == 1, (o.code, o.err[-2000:])
    assert all((out / name).is_file() for name in OUTPUTS), sorted(p.name for p in out.iterdir())
    (row,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    said = f"{what}: {'deleted' if how == 'deleted' else 'replaced by'}"
    named = [f for f in row["failures"] if said in f and "while the scenario ran" in f]
    assert row["status"] == "failed", row
    assert named, row["failures"]
    step = int(named[0].split()[1])
    probes = [json.loads(line) for line in (out / "probes.jsonl").read_text().splitlines()]
    if not after and gone[0] in ("recall", "forget"):  # it found the store gone: its probe row carries the message
        assert any(p["step"] == step and said in (p.get("error_message") or "") for p in probes), (step, probes)


# 3. The command line: an option given twice, an empty list of names --------------------------------------------------

def _store_options() -> list[tuple[tuple[str, ...], str, object]]:
    """(subcommand words, option, its action) for every single-value option of every subcommand."""
    import argparse

    from harness.cli._parser import build_parser

    found = []

    def walk(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    walk(child, (*words, name))
            elif isinstance(action, argparse._StoreAction) and action.option_strings:
                found.append((words, action.option_strings[-1], action))
    walk(build_parser(), ())
    return found


STORE_OPTIONS = _store_options()
# values every typed option parses (a number type refuses text; choices list their own)
PLAIN = {"--jobs": ("1", "2"), "--timeout-scale": ("1", "2"), "--shard": ("1/2", "2/2"), "--fuzz-examples": ("0", "1"),
         "--max-drop": ("0.1", "0.2"), "--max-examples": ("1", "2"), "--seed": ("0", "1"), "--min-precision": ("0", "1"),
         "--min-recall": ("0", "1"), "--generated": ("0", "1"), "--timeout": ("1", "2"), "--min-kill-rate": ("0", "1"),
         "--cases": ("1", "2")}


@SETTINGS
@given(index=st.integers(0, len(STORE_OPTIONS) - 1), same=st.booleans(), equals=st.booleans())
def test_an_option_given_twice_with_two_values_is_refused(index: int, same: bool, equals: bool,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Every single-value option of every subcommand: two different values are one located line, exit 2 (the last
    won in silence before: ``--out a --out b`` wrote b); the same value twice parses as given once."""
    from harness.cli._parser import build_parser
    from harness.errors import HarnessError

    words, option, action = STORE_OPTIONS[index]
    first, second = action.choices[:2] if action.choices else PLAIN.get(option, ("alpha", "beta"))  # type: ignore[attr-defined]
    second = first if same else second
    spell = (lambda o, v: [f"{o}={v}"]) if equals else (lambda o, v: [o, v])
    parser = build_parser(words[0])
    args = [*words, *spell(option, first), *spell(option, second)]
    if same:
        with contextlib.suppress(HarnessError):  # a missing positional or required option: not this test's
            parsed = parser.parse_known_args(args)[0]
            assert str(getattr(parsed, action.dest)) == str(action.type(first) if action.type else first)  # type: ignore[attr-defined]
            assert not any(k.startswith("_memharness") for k in vars(parsed))
        return
    with pytest.raises(HarnessError) as raised:
        parser.parse_known_args(args)
    message = str(raised.value)
    assert message.startswith(f"usage: argument {'/'.join(action.option_strings)}: given twice"), message  # type: ignore[attr-defined]
    assert "\n" not in message


@SETTINGS
@given(command=st.sampled_from([("run", "--strategy"), ("run", "--tag"), ("record", "--tag"), ("sensitivity", "--tag"),
                                ("bench", "locomo", "x.json", "--strategy")]),
       empty=st.text(st.sampled_from(", \t"), max_size=6))
def test_an_empty_list_of_names_is_refused(command: tuple[str, ...], empty: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """``--strategy ''`` ran the default strategies without a word (``--tag ','`` matched nothing, said as a tag
    named ''): each is one line naming the option, exit 2, before any work."""
    tiny = tmp_path / "suite"  # a suite of one scenario: the code before the fix ran it (record, sensitivity: tried to)
    tiny.mkdir(exist_ok=True)
    (tiny / "s.yaml").write_text('description: d\ntags: [a]\nsteps: [{advance: 1h}]\n')
    words = [*command[:-1], str(tiny)] if command[0] != "bench" else list(command[:-1])
    o = cli([*words, command[-1], empty, "--out", str(tmp_path / "out")], capsys)
    assert_one_line_error(o, mentions=(f"argument {command[-1]}: expected a name or comma-separated names",), budget=10.0)
    assert not (tmp_path / "out").exists()


@SETTINGS
@given(index=st.integers(0, len(STORE_OPTIONS) - 1))
def test_an_option_whose_value_is_a_double_dash_is_refused(index: int) -> None:
    """``--out=--``: argparse drops the ``--`` and stores an empty list, past the option's type. It ended in
    ``internal error: AttributeError: 'list' object has no attribute 'resolve'`` (``--out``, ``--endpoint``) or ran
    as if the option were not given (``--strategy=--``, ``--repo=--``); now one line naming the option, exit 2."""
    from harness.cli._parser import build_parser
    from harness.errors import HarnessError

    words, option, action = STORE_OPTIONS[index]
    with pytest.raises(HarnessError) as raised:
        build_parser(words[0]).parse_known_args([*words, f"{option}=--"])
    message = str(raised.value)
    assert message.startswith(f"usage: argument {'/'.join(action.option_strings)}: expected one argument"), message  # type: ignore[attr-defined]


# 4. `cassettes status` of a directory that is no cassette set -----------------------------------------------------

@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.sets(st.sampled_from(["cassette.jsonl", "cassette-meta.json", "notes.txt", "cassettes.jsonl",
                                      "sub/cassette.jsonl"])), n=st.integers(0, 10**6))
def test_cassettes_status_of_no_set_is_refused(tmp_path_factory: pytest.TempPathFactory,
                                               capsys: pytest.CaptureFixture[str], files: set[str], n: int) -> None:
    """A directory holding neither ``cassette.jsonl`` nor ``cassette-meta.json`` (empty, or other files) said
    "0 entries", exit 0, as if it were an empty set; now it is one line naming it, exit 2. A set (even empty) reads."""
    root = tmp_path_factory.mktemp(f"set{n}")
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("{}" if name.endswith(".json") else "", encoding="utf-8")
    o = cli(["cassettes", "status", str(root)], capsys)
    if {"cassette.jsonl", "cassette-meta.json"} & files:
        assert (o.code, o.err) == (0, ""), o.err
        assert o.out.startswith(f"0 entries in {root}")
    else:
        assert_one_line_error(o, mentions=(str(root), "not a cassette set"))
