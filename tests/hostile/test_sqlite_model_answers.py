"""Hostile model answers to the SQLite system's extraction, query decomposition and episode summaries (issue 33):
whatever a model says — wrong types, huge or empty strings, NaN and infinite numbers, deep nesting, prose around
JSON, FTS5 syntax and SQL in the keywords — every operation returns its documented result (a fallback with a
reason, or nothing recorded), nothing escapes, and what is stored stays within the spec's bounds. Generated
(Hypothesis); both modes."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_core.clock import FixedClock
from memory_core.model import ScriptedModel
from memory_core.sqlite import Quirks, SqliteMemory
from tests.helpers import examples
from tests.sqlite.conftest import scratch

TURN = "I always deploy the billing service with docker compose on the staging box"
ODD_TEXT = st.one_of(st.text(max_size=30), st.sampled_from(["", " ", "NONE", "none", "'; DROP TABLE memories; --",
                                                             "NEAR(a b)", 'x" OR "y', "a* ^b -c", "x" * 5000]))
ODD_VALUE = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
                                   ODD_TEXT), lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                                      st.dictionaries(ODD_TEXT, inner, max_size=3)),
                         max_leaves=8)
ITEM = st.fixed_dictionaries({}, optional={
    "type": st.one_of(st.sampled_from(["FACT", "PREFERENCE", "RULE", "SKILL", "ERROR", "fact", "?"]), ODD_VALUE),
    "subject": ODD_VALUE, "predicate": ODD_VALUE, "content": st.one_of(ODD_TEXT, ODD_VALUE),
    "importance": st.one_of(st.floats(allow_nan=True), st.sampled_from(["high", "0.9", None, True]), ODD_VALUE),
    "duration": st.one_of(st.sampled_from(["permanent", "7d", "24h", "session", "forever"]), ODD_VALUE),
    "is_update": ODD_VALUE, "update_hint": ODD_VALUE})
EXTRACTION = st.one_of(st.fixed_dictionaries({"items": st.lists(ITEM, max_size=5)}), ODD_VALUE.map(lambda v: {"items": v}),
                       ODD_TEXT, st.builds(lambda v: f"Sure! Here you go: {json.dumps(v)} hope that helps", ODD_VALUE))
DECOMPOSITION = st.one_of(
    st.fixed_dictionaries({}, optional={"keywords": st.one_of(st.lists(ODD_TEXT, max_size=9), ODD_VALUE),
                                        "intent": ODD_VALUE}), ODD_TEXT)
EPISODE = st.one_of(st.fixed_dictionaries({}, optional={k: ODD_VALUE for k in ("summary", "goal", "outcome", "entities",
                                                                               "tools_used")}), ODD_TEXT)


def _as_reply(value: Any) -> Any:
    try:
        json.dumps(value, allow_nan=True)
    except (TypeError, ValueError):
        return str(value)
    return value


@settings(max_examples=examples(80), deadline=None)
@given(st.lists(st.one_of(EXTRACTION, DECOMPOSITION, EPISODE), min_size=1, max_size=12), st.sampled_from(["seed", "fixed"]))
def test_any_model_answer_gives_a_documented_result(replies: list[Any], mode: str) -> None:
    with scratch() as root:
        model = ScriptedModel.of([_as_reply(r) for r in replies])
        memory = SqliteMemory(root / "m.db", FixedClock(datetime(2026, 3, 2, tzinfo=UTC)), model, Quirks.parse(mode), None)
        try:
            memory.add_turns("s1", [{"role": "user", "content": TURN}, {"role": "assistant", "content": "Noted."}])
            extracted = memory.extract("s1", strategy="model")
            assert extracted.status == "completed"
            recalled = memory.recall("how do we deploy the billing service", 5, "model")
            assert isinstance(recalled.items, list | tuple)
            memory.add_turns("s2", [{"role": "user", "content": TURN.replace("billing", "payments")}])
            dreamed = memory.dream(force=True, strategy="model")
            assert dreamed.status in ("updated", "noop", "skipped", "failed")
            for row in memory.db.load_all():
                assert isinstance(row["content"], str)
                assert row["content"].strip()
                score = float(row["importance_score"])
                assert not math.isnan(score)
                assert 0.1 <= score <= 1.0
                assert row["priority"] in ("permanent", "long_term", "short_term", "transient", "PERMANENT",
                                           "LONG_TERM", "SHORT_TERM", "TRANSIENT")
        finally:
            memory.close()
