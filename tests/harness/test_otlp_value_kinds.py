"""``memharness report`` reads ``traces.jsonl``: an attribute value of the wrong type for its OTLP kind is one line
saying what was expected, for every kind (an ``intValue`` or ``doubleValue`` of the wrong type raised
``AttributeError: 'tuple' object has no attribute '__name__'``: the default of a ``dict.get`` was evaluated)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.telemetry._otlp_read import _ANY_VALUE, _value_problem

_INNER = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5),
                   st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@pytest.mark.parametrize("kind", sorted(_ANY_VALUE))
@given(inner=_INNER)
def test_every_kind_of_value_is_accepted_or_one_line(kind: str, inner: Any) -> None:
    problem = _value_problem({kind: inner})
    wrong = not isinstance(inner, _ANY_VALUE[kind]) or (isinstance(inner, bool) and kind != "boolValue")
    assert (problem is not None) == wrong
    if problem is not None:
        assert problem.startswith(f"{kind}: expected ")
        assert "\n" not in problem
