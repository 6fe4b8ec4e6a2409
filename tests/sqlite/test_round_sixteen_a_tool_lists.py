"""Round 16a: a turn's ``tool_calls`` / ``tool_results`` given to ``add_turns`` through the Python API in any shape:
a list of JSON objects (lone surrogates included) is recorded and extracted; anything else (no list, an entry that is
no mapping, a value JSON cannot hold) is a ``ValueError`` naming the list, before anything is stored. Before, an entry
that was no mapping raised ``AttributeError`` from ``extract`` (the turn already stored), a set or bytes ``TypeError``
and a lone surrogate ``UnicodeEncodeError`` from ``add_turns``. Generated."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_core.clock import FixedClock
from memory_core.model import ScriptedModel
from memory_core.sqlite import Quirks, SqliteMemory
from tests.helpers import examples
from tests.sqlite.conftest import T0, scratch

TURN = "I always deploy the billing service with docker compose on the staging box"
JSONISH = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8)),
                       lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner,
                                                                                              max_size=3)), max_leaves=6)
ODD = st.one_of(st.sets(st.integers(), min_size=1, max_size=2), st.binary(min_size=1, max_size=4))
ENTRY = st.one_of(st.dictionaries(st.sampled_from(["name", "input", "arguments", "content", "is_error", "x"]),
                                  st.one_of(JSONISH, st.dictionaries(st.sampled_from(["command", "path", "query"]),
                                                                     JSONISH, max_size=2))),
                  JSONISH, st.dictionaries(st.just("input"), st.dictionaries(st.just("command"), ODD, min_size=1),
                                           min_size=1))
TOOLS = st.one_of(st.lists(ENTRY, max_size=4), st.tuples(ENTRY), JSONISH)


def _valid(value: Any) -> bool:
    if not value:
        return True
    if not isinstance(value, list | tuple) or not all(isinstance(x, dict) for x in value):
        return False
    try:
        json.dumps(list(value))
    except (TypeError, ValueError):
        return False
    return True


@settings(max_examples=examples(120), deadline=None)
@given(calls=TOOLS, results=TOOLS, mode=st.sampled_from(["seed", "fixed"]))
def test_tool_lists_are_recorded_or_refused_by_name(calls: Any, results: Any, mode: str) -> None:
    with scratch() as root:
        model = ScriptedModel.of([{"items": []}, {"summary": "The user talked about deploys."}])
        memory = SqliteMemory(root / "m.db", FixedClock(T0), model, Quirks.parse(mode))
        try:
            turn = {"role": "user", "content": TURN, "tool_calls": calls, "tool_results": results}
            if not (_valid(calls) and _valid(results)):
                with pytest.raises(ValueError, match=r"tool_calls|tool_results"):
                    memory.add_turns("s1", [turn])
                assert memory.db.conn.execute("SELECT COUNT(*) FROM conversation_turns").fetchone()[0] == 0
                return
            memory.add_turns("s1", [turn])
            assert memory.extract("s1", strategy="model").status == "completed"
            assert memory.search_traces("deploy")
            assert memory.dream(force=True).status in ("updated", "noop")
        finally:
            memory.close()


@settings(max_examples=examples(40), deadline=None)
@given(text=st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=3))
def test_a_lone_surrogate_in_a_tool_call_is_stored_as_the_replacement_character(text: str) -> None:
    with scratch() as root:
        memory = SqliteMemory(root / "m.db", FixedClock(T0), None, Quirks.fixed())
        try:
            memory.add_turns("s1", [{"role": "user", "content": TURN,
                                     "tool_calls": [{"name": "sh", "input": {"command": f"run {text} now"}}]}])
            (stored,) = memory.db.conn.execute("SELECT tool_calls FROM conversation_turns").fetchone()
            assert json.loads(stored)[0]["input"]["command"] == "run " + "\ufffd" * len(text) + " now"
        finally:
            memory.close()
