"""Round 14a of the hostile-input trial (a helper's blind probe, generated inputs): scenario files re-serialised and
byte-mutated, and a run's own files read back. Each test is generated and fails on the code before its fix."""

from __future__ import annotations

import random
import sys
import unicodedata
from pathlib import Path

import pytest

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
