"""A turn holding a long run of word characters, dots or dashes (hostile probe, round 11): the episode's file-name
regex rescanned the run from each of its characters, so ending a session took quadratic time (40 KB of ``x.x.x.``:
59 s of CPU in ``extract`` and 30 s in ``dream``; 40 KB of unpunctuated Chinese: 7.6 s). Generated: the repeated
unit and the length; every operation stays within the hostile suite's bound (``within``: 2 s of CPU). The fixed
regex finds what the old one found (generated texts, compared with the old pattern)."""

from __future__ import annotations

import os
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_core.clock import FixedClock
from memory_core.sqlite import SqliteMemory
from memory_core.sqlite.episodes import _FILE
from tests.hostile.harness import within
from tests.sqlite.conftest import T0, scratch

EXAMPLES = int(os.environ.get("MEMHARNESS_HOSTILE_DB_EXAMPLES", "60"))
OLD_FILE = re.compile(r"[\w.-]+\.(?:py|js|ts|md|json|yaml|toml|sh)\b", re.IGNORECASE)
"""The pattern before the fix (the seed's), the reference for what is found."""
PIECES = ["x", ".", "-", "_", "1", "中", "记住", " ", "py", "PY", "json", "md", "sh", "yaml", "a.py", ".py", "\\", ":",
          "C:\\", "\n", "é", "/"]


@settings(max_examples=EXAMPLES * 5, deadline=None)
@given(text=st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
def test_the_file_pattern_finds_what_the_seed_pattern_found(text: str) -> None:
    assert _FILE.findall(text) == OLD_FILE.findall(text)


@settings(max_examples=max(EXAMPLES // 6, 3), deadline=None)
@given(unit=st.lists(st.sampled_from(["x", ".", "-", "_", "1", "中", "a.b", "py"]), min_size=1, max_size=3).map("".join),
       size=st.integers(40_000, 80_000), role=st.sampled_from(["user", "assistant"]))
def test_a_long_run_in_a_turn_ends_its_session_in_bounded_time(unit: str, size: int, role: str) -> None:
    text = (unit * (size // len(unit) + 1))[:size]
    with scratch() as tmp:
        mem = SqliteMemory(tmp / "m.db", FixedClock(T0))
        try:
            within(lambda: mem.add_turns("s1", [{"role": role, "content": text}]))
            within(lambda: mem.extract("s1"))
            within(lambda: mem.add_turns("s2", [{"role": role, "content": text}]))
            within(lambda: mem.dream(force=True))  # s2 was never extracted: dream's episode reads it
        finally:
            mem.close()
