"""A result whose fields break their annotations is the system's failure, whatever the kind of break (hostile
probe, round 8: `details={1: 2}`, `details={'a': object()}`, NaN scores and a NUL in a warning all passed)."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from harness.replay._shapes import shape_problem
from harness.system import ExtractResult, RecallResult

GOOD_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                         st.text(max_size=10).filter(lambda t: "\x00" not in t))
BAD_DETAILS = st.one_of(
    st.dictionaries(st.integers(), GOOD_SCALARS, min_size=1, max_size=3),  # a key that is not a name
    st.dictionaries(st.text(max_size=5), st.one_of(st.just(object()), st.lists(st.integers(), max_size=2),
                                                   st.just({"nested": 1}), st.just(math.nan), st.just(math.inf),
                                                   st.just("a\x00b")), min_size=1, max_size=3))


@given(details=st.dictionaries(st.text(max_size=8).filter(lambda t: "\x00" not in t), GOOD_SCALARS, max_size=4),
       scores=st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=4),
       warnings=st.lists(st.text(max_size=20).filter(lambda t: not set(t) & {"\x00", "\n", "\r"}), max_size=3))
def test_a_well_formed_result_passes(details: dict[str, Any], scores: list[float], warnings: list[str]) -> None:
    assert shape_problem(RecallResult(("a",) * len(scores), "heuristic", scores=tuple(scores), details=details)) is None
    assert shape_problem(ExtractResult("completed", warnings=tuple(warnings), details=details)) is None


@given(field=st.sampled_from(["details", "scores", "warnings"]), data=st.data())
def test_a_result_breaking_its_annotation_is_named(field: str, data: st.DataObject) -> None:
    if field == "details":
        result: Any = RecallResult((), "heuristic", details=data.draw(BAD_DETAILS))
    elif field == "scores":
        scores = data.draw(st.lists(st.floats(), min_size=1, max_size=3).filter(
            lambda v: not all(math.isfinite(x) for x in v)))
        result = RecallResult(("a",) * len(scores), "heuristic", scores=tuple(scores))
    else:
        bad = data.draw(st.sampled_from(["\x00", "\n", "\r"]))
        result = ExtractResult("completed", warnings=(data.draw(st.text(max_size=5)) + bad + "x",))
    problem = shape_problem(result)
    assert problem is not None
    assert problem.startswith(f"{field}=")
