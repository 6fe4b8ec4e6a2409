"""Round 14a of the hostile-input trial (a helper's blind probe, generated inputs): scenario files re-serialised and
byte-mutated, and a run's own files read back. Each test is generated and fails on the code before its fix."""

from __future__ import annotations

import contextlib
import io
import json
import random
import shutil
import sys
import unicodedata
from pathlib import Path

import pytest

from harness.cli import main
from tests.hostile_cli._support import assert_one_line_error, cli

REPO = Path(__file__).resolve().parents[2]
SQLITE_SEED = """description: a seeded memory with a system field the sqlite system does not know
design: s1-sqlite
strategies: [heuristic]
clock: 2026-03-02T09:00:00Z
facts:
  f: {type: user, match: ["helix"]}
memories:
  - {path: user/editor.md, name: editor, type: user, body: "Edits in helix", facts: [f], age: 1d,
     system: {"%s": 0.5}}
steps:
  - recall: {query: helix, expect: [f], expect_selected: [user/editor.md]}
"""


def _unprintable(seed: int, count: int) -> list[str]:
    """``count`` characters ``str.isprintable`` refuses but a YAML key may hold raw (format characters, spaces other
    than ' ', private-use and unassigned code points), drawn with a fixed seed."""
    rng = random.Random(seed)
    found: list[str] = []
    while len(found) < count:
        c = chr(rng.randrange(0xA0, sys.maxunicode + 1))
        if not c.isprintable() and unicodedata.category(c) in ("Cf", "Zs", "Co", "Cn") and \
                not 0xD800 <= ord(c) <= 0xDFFF and c not in "\u2028\u2029\ufeff" and ord(c) < 0xF0000:
            found.append(c)
    return [*found, "\ufeff", "\u202e", "\u00a0"]


@pytest.mark.parametrize("char", _unprintable(14, 12), ids=lambda c: f"U+{ord(c):04X}")
def test_validate_prints_a_system_problem_on_one_printable_line(
        char: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Found by byte mutation: ``validate`` printed the problems a system's own input check finds (an unknown
    ``system:`` field) without escaping them, so a key holding U+FEFF was quoted raw, unlike every other error."""
    source = tmp_path / "bad-key.yaml"
    source.write_text(SQLITE_SEED % f"importa{char}nce", encoding="utf-8")
    o = cli(["validate", "--strict", str(source)], capsys)
    assert_one_line_error(o, mentions=(f"{source}:9: ", "memories[0].system", ascii(char)[1:-1]), budget=10.0)


@pytest.fixture(scope="module")
def recall_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run of three shipped recall scenarios (several columns, recall and check probes)."""
    out = tmp_path_factory.mktemp("run") / "base"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(["run", *(str(REPO / "scenarios" / "recall" / name) for name in
                              ("multi-fact.yaml", "type-user.yaml", "bm25-after-extract-sees-new-memory.yaml")),
                     "--out", str(out), "--no-gates"], environ={})
    assert code == 0
    return out


def _lose_rows(run: Path, rng: random.Random) -> str:
    """Delete, at random, results rows with their probes or recall probes alone; the column whose count is off."""
    results = [json.loads(line) for line in (run / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    probes = [json.loads(line) for line in (run / "probes.jsonl").read_text(encoding="utf-8").splitlines()]
    if rng.random() < 0.5:
        gone = rng.sample(results, rng.randrange(1, len(results)))
        pairs = {(r["scenario"], r["strategy"]) for r in gone}
        results = [r for r in results if (r["scenario"], r["strategy"]) not in pairs]
        probes = [p for p in probes if (p["scenario"], p["strategy"]) not in pairs]
    else:
        recall = [p for p in probes if p["kind"] == "recall"]
        gone = rng.sample(recall, rng.randrange(1, len(recall) + 1))
        probes = [p for p in probes if p not in gone]
    for name, rows in (("results.jsonl", results), ("probes.jsonl", probes)):
        (run / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return min(r["strategy"] for r in gone)


@pytest.mark.parametrize("seed", range(8))
def test_rows_lost_from_a_run_directory_are_an_error_naming_the_count(
        seed: int, recall_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Found by multi-row mutation: a run directory whose ``results.jsonl`` lost a row together with its probes, or
    whose ``probes.jsonl`` lost recall probes, was read silently: ``report`` drew it, ``merge`` wrote a run with
    fewer probes whose gates passed. The rows must add up to ``summary.json``'s counts of them."""
    run = tmp_path / "lost"
    shutil.copytree(recall_run, run)
    _lose_rows(run, random.Random(seed))
    command = [["report", str(run), "-o", str(tmp_path / "r.html")], ["compare", str(recall_run), str(run)],
               ["merge", str(tmp_path / "merged"), str(run)]][seed % 3]
    o = cli(command, capsys)
    assert_one_line_error(o, mentions=(f"{run / 'summary.json'}:", ": strategies.", "a row lost or added"),
                          budget=20.0)
    assert not (tmp_path / "merged").exists()


def test_a_run_directory_read_back_whole_is_accepted(recall_run: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The counts agree for every run the harness writes: the run itself and a merge of it."""
    assert cli(["report", str(recall_run), "-o", str(tmp_path / "r.html")], capsys).code == 0
    assert cli(["merge", str(tmp_path / "merged"), str(recall_run)], capsys).code == 0
    assert cli(["compare", str(recall_run), str(tmp_path / "merged")], capsys).code == 0


def _wide(seed: int) -> str:
    """An integer TOML reads but 64 bits do not hold: from 2**63 up to 6,000 digits, either sign, drawn with a seed."""
    rng = random.Random(seed)
    digits = rng.choice([19, 20, 40, 309, 400, 4300, 4301, 6000])
    value = str(rng.randrange(1, 10)) + "".join(rng.choice("0123456789") for _ in range(digits - 1))
    if digits <= 19:  # a 20-digit one is above 2**63 already
        value = str((1 << 63) + int(value))
    return rng.choice(["", "-", "+"]) + value if rng.random() < 0.8 else hex(int(value[:4000])) + "f" * digits


@pytest.mark.parametrize("seed", range(10))
def test_a_gates_integer_beyond_64_bits_is_a_located_error(seed: int, recall_run: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Found by generated TOML: ``max = 1`` and 400 zeros ended ``--gates`` in ``internal error: OverflowError``,
    5,000 digits in ``internal error: ValueError`` (Python's 4,300-digit limit); TOML integers are 64-bit."""
    key = random.Random(seed).choice(["min", "max", "max_drop"])
    gates = tmp_path / "gates.toml"
    gates.write_text(f'# generated\n[[gate]]\nmetric = "recall.recall"\nvs = "baseline"\n{key} = {_wide(seed)}\n',
                     encoding="utf-8")
    o = cli(["merge", str(tmp_path / "merged"), str(recall_run), "--gates", str(gates)], capsys)
    assert_one_line_error(o, mentions=(f"{gates}:5: ", "TOML integers are 64-bit"), budget=20.0)
    assert len(o.err) < 300
    assert not (tmp_path / "merged").exists()


@pytest.mark.parametrize("vs", ["basline", "Baseline", "heuristic@sqlite", "model:qwen", "", " baseline", "bm-25"])
def test_a_gates_vs_naming_nothing_is_a_located_error(vs: str, recall_run: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Found by generated TOML: ``vs = "basline"`` was accepted; ``compare --gates`` keeps only ``vs = "baseline"``
    gates, so the mistyped one was dropped without a word (and ``run`` failed it as "no paired comparison")."""
    gates = tmp_path / "gates.toml"
    gates.write_text(f'[[gate]]\nmetric = "recall.recall"\nmax_drop = 0.05\nvs = {json.dumps(vs)}\n', encoding="utf-8")
    o = cli(["compare", str(recall_run), str(recall_run), "--gates", str(gates)], capsys)
    assert_one_line_error(o, mentions=(f"{gates}:4: gate 1: unknown vs ",), budget=20.0)


@pytest.mark.parametrize("seed", range(6))
def test_a_cassette_entry_written_twice_is_a_located_error(seed: int, tmp_path: Path) -> None:
    """Found by multi-line cassette mutation: an entry whose key is on two lines (two recordings merged, a line
    copied) was read silently and the last one replayed, whatever the first answered; the recorder never writes a
    key twice, so the copy is an error naming both lines, as a row written twice in a run file is."""
    from harness.errors import HarnessError
    from harness.replay._cassette import Cassette

    rng = random.Random(seed)
    source = REPO / "scenarios" / "cassettes" / "qwen2.5-coder-1.5b" / "cassette.jsonl"
    lines = source.read_text(encoding="utf-8").split("\n")[:-1]
    first = rng.randrange(len(lines) - 1)
    copy = json.loads(lines[first])
    if rng.random() < 0.5 and "response" in copy:
        copy["response"]["text"] = rng.choice(["", "{}", copy["response"]["text"] + " "])
    at = rng.randrange(first + 1, len(lines) + 1)
    lines.insert(at, json.dumps(copy, ensure_ascii=False, sort_keys=True))
    (tmp_path / "cassette.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(HarnessError) as caught:
        Cassette.open(tmp_path)
    assert str(caught.value).startswith(f"{tmp_path / 'cassette.jsonl'}:{at + 1}: key: {copy['key'][:16]}")
    assert f"is also on line {first + 1};" in str(caught.value)


def _long_scenario(rng: random.Random) -> list[str]:
    """The lines of a valid scenario of more than 100,000 characters in all (each line short): a long literal
    description, as a generated or imported scenario may hold."""
    body = ["  " + "".join(rng.choice("abcdefgh ") for _ in range(rng.randrange(50, 60))).strip() + "x"
            for _ in range(rng.randrange(2000, 2200))]
    return ["description: |", *body, "tags: [recall]", "clock: 2026-03-02T09:00:00Z",
            "facts:", '  f: {type: user, match: ["helix"]}', "memories:",
            '  - {path: user/editor.md, name: editor, type: user, body: "Edits in helix", facts: [f], age: 1d}',
            "steps:", "  - recall: {query: helix, expect: [f], expect_selected: [user/editor.md]}"]


@pytest.mark.parametrize("seed", range(4))
def test_line_ends_cr_crlf_or_lf_read_the_same(seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Found by re-serialising scenarios with random line ends: a file with CR-only line ends (old Mac, some
    generators) is read by YAML as lines, but the line-length check split on LF only, so a valid file of more than
    100,000 characters was refused as one line that long; and a byte that is not UTF-8 was said to be on line 1."""
    rng = random.Random(seed)
    lines = _long_scenario(rng)
    ends = [rng.choice(["\r", "\r\n", "\n"]) for _ in lines] if seed % 2 else [rng.choice(["\r", "\r\n"])] * len(lines)
    text = "".join(line + end for line, end in zip(lines, ends, strict=True))
    source = tmp_path / "long.yaml"
    source.write_bytes(text.encode("utf-8"))
    o = cli(["validate", "--strict", str(source)], capsys)
    assert (o.code, o.err) == (0, "")
    bad = rng.randrange(2, len(lines) - 8)
    source.write_bytes("".join(line + ("\udcff" if n == bad else "") + end for n, (line, end)
                               in enumerate(zip(lines, ends, strict=True), 1)).encode("utf-8", "surrogateescape"))
    o = cli(["validate", str(source)], capsys)
    assert_one_line_error(o, mentions=(f"{source}:{bad}: file: cannot be read (not UTF-8: byte 0xff)",), budget=10.0)


STAND_IN_RANGE = [*range(0xFDD0, 0xFDF0), 0xE000, 0xE001, 0xE002, 0xF8FF]


@pytest.mark.parametrize("seed", range(12))
def test_escaped_stand_ins_and_raw_breaks_read_back_as_written(seed: int, tmp_path: Path) -> None:
    """A double-quoted text mixing raw NEL / U+2028 / U+2029 (which the loader swaps for stand-ins while PyYAML
    reads) with escapes of the characters it could choose as stand-ins reads back exactly as written. Before, a
    ``\\ufdd1`` escape in a file holding a raw U+2028 came back as U+2028 (round 14a, a silent change)."""
    from harness.scenario import load_scenario

    rng = random.Random(seed)
    wanted, written = [], []
    for _ in range(rng.randrange(4, 40)):
        kind = rng.randrange(4)
        if kind == 0:
            ch = rng.choice("\x85\u2028\u2029")
            wanted.append(ch)
            written.append(ch)  # raw: the loader's swap is in play
        elif kind == 1:
            code = rng.choice(STAND_IN_RANGE)
            wanted.append(chr(code))
            written.append(f"\\u{code:04x}" if rng.random() < 0.8 else f"\\U{code:08X}")
        else:
            ch = rng.choice("abc xyz")
            wanted.append(ch)
            written.append(ch)
    text = (REPO / "scenarios" / "recall" / "type-user.yaml").read_text(encoding="utf-8")
    lines = [f'description: "{"".join(written)}"' if line.startswith("description:") else line
             for line in text.splitlines()]
    lines.insert(0, "# a raw \u2028 here: the swap happens whatever the text holds")
    path = tmp_path / "s.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert load_scenario(path).description == "".join(wanted)
