"""Round 16a: the trace search's and the session's own arguments at and past their bounds (Python API, spec §4.6):
a lone surrogate in a session id or a role is stored as U+FFFD and the session is extracted and searched by the same
id (before: UnicodeEncodeError from sqlite3); ``max_results`` below 0 or past SQLite's integers is a ``ValueError``
(before: -1 was SQLite's "no limit" and returned every turn, 2**63 raised OverflowError); a ``days_back`` past the
calendar's range is a window holding every turn (or none, backwards) (before: OverflowError). Generated."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_core.clock import FixedClock
from memory_core.sqlite import Quirks, SqliteMemory
from tests.helpers import examples
from tests.sqlite.conftest import T0, scratch

TURN = "I always deploy the billing service with docker compose on the staging box"
SURROGATE = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
ID = st.lists(st.one_of(SURROGATE, st.characters(codec="utf-8")), min_size=1, max_size=6).map("".join)


@settings(max_examples=examples(60), deadline=None)
@given(session=ID, role_noise=st.text(SURROGATE, max_size=2), max_results=st.integers(-(2**64), 2**64),
       days_back=st.one_of(st.integers(-(10**30), 10**30), st.integers(-3, 3)), mode=st.sampled_from(["seed", "fixed"]))
def test_trace_and_session_arguments_work_or_are_refused_by_name(session: str, role_noise: str, max_results: int,
                                                                  days_back: int, mode: str) -> None:
    with scratch() as root:
        memory = SqliteMemory(root / "m.db", FixedClock(T0), None, Quirks.parse(mode))
        try:
            memory.add_turns(session, [{"role": "user", "content": TURN}, {"role": f"assistant{role_noise}",
                                                                           "content": "Noted, docker compose."}])
            assert memory.extract(session).status == "completed"
            assert len(memory.search_traces("docker", session_id=session)) == 2
            if not 0 <= max_results < 2**63:
                with pytest.raises(ValueError, match="max_results"):
                    memory.search_traces("docker", max_results=max_results, days_back=days_back)
                return
            rows = memory.search_traces("docker", max_results=max_results, days_back=days_back)
            assert len(rows) == (min(2, max_results) if days_back >= 0 else 0)  # the turns are stamped now
        finally:
            memory.close()
