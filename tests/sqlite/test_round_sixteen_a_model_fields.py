"""Round 16a: a model's extraction item or episode whose text field (``type``, ``subject``, ``predicate``,
``update_hint``, the episode's ``goal``) is a JSON array or object is a bad item (skipped alone in the fixed mode, the
batch lost in the seed's, spec §3.4 / §7 Q9) or no goal — never stored as the Python repr of that value. Generated."""

from __future__ import annotations

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
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-10, 10), st.floats(allow_nan=False, allow_infinity=False),
                   st.text(max_size=12))
CONTAINER = st.recursive(st.one_of(st.lists(SCALAR, max_size=3), st.dictionaries(st.text(max_size=5), SCALAR, max_size=3)),
                         lambda inner: st.one_of(st.lists(inner, max_size=2), st.dictionaries(st.text(max_size=5), inner,
                                                                                                max_size=2)), max_leaves=6)
FIELDS = ("type", "subject", "predicate", "update_hint")


def _good(n: int) -> dict[str, Any]:
    return {"type": "FACT", "subject": "user", "predicate": f"deploy{n}", "content": f"The user deploys service {n} with docker",
            "importance": 0.7, "duration": "permanent"}


@settings(max_examples=examples(60), deadline=None)
@given(bad=st.dictionaries(st.sampled_from(FIELDS), CONTAINER, min_size=1), goal=CONTAINER, at=st.integers(0, 2),
       mode=st.sampled_from(["seed", "fixed"]))
def test_an_array_or_object_in_a_text_field_is_a_bad_item_not_its_repr(bad: dict[str, Any], goal: Any, at: int,
                                                                      mode: str) -> None:
    items = [_good(0), _good(1)]
    items.insert(at, {**_good(9), **bad})
    episode = {"summary": "The user talked about deploys.", "goal": goal, "outcome": "success"}
    with scratch() as root:
        memory = SqliteMemory(root / "m.db", FixedClock(datetime(2026, 3, 2, tzinfo=UTC)),
                              ScriptedModel.of([{"items": items}, episode]), Quirks.parse(mode), None)
        try:
            memory.add_turns("s1", [{"role": "user", "content": TURN}, {"role": "assistant", "content": "Noted."}])
            result = memory.extract("s1", strategy="model")
            rows = memory.db.load_all()
            texts = {str(r["content"]) for r in rows}
            assert "The user deploys service 9 with docker" not in texts
            assert result.inserted == (0 if mode == "seed" else 2)  # the seed's one try block loses the batch (Q9)
            for row in rows:
                for column in ("subject", "predicate", "tags", "type"):
                    assert not str(row[column]).startswith(("[[", "[{", "{")), (column, row[column])
            (stored_goal,) = memory.db.conn.execute("SELECT goal FROM episodes").fetchone()
            assert stored_goal == ""
        finally:
            memory.close()
