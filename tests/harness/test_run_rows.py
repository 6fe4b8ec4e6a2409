"""A run directory's JSONL rows are the same text whether json writes a row as it is (the fast path) or only after
``finite_json`` walked it (NaN and the infinities as null, mappings as dicts, tuples as lists; issue 34)."""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.reporting import jsonl
from harness.telemetry import finite_json
from tests.helpers import examples

LEAVES = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
VALUES = st.recursive(
    LEAVES, lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    | st.dictionaries(st.text(max_size=4), inner, max_size=3).map(MappingProxyType), max_leaves=12)
ROWS = st.lists(st.dictionaries(st.text(max_size=6), VALUES, max_size=4), max_size=4)


@settings(max_examples=examples(300), deadline=None)
@given(rows=ROWS)
def test_rows_are_the_text_the_walk_gives(rows: list[dict[str, Any]]) -> None:
    walked = "".join(json.dumps(finite_json(dict(r)), ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    assert jsonl(rows) == walked
    for line in jsonl(rows).split("\n")[:-1]:  # U+0085, U+2028 stay inside a line
        json.loads(line, parse_constant=lambda c: (_ for _ in ()).throw(AssertionError(f"{c} in a row")))
