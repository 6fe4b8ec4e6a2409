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


def _booby_trapped(base: type) -> type:
    """A subclass of ``base`` each of whose value methods raises (what a hostile system can return)."""
    def boom(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError(f"{base.__name__} subclass method called")
    names = ("__eq__", "__hash__", "__str__", "__repr__", "__format__", "__float__", "__int__", "__index__", "__lt__",
             "__contains__", "__bool__", "__add__", "lower", "strip", "split")
    return type(f"Hostile{base.__name__}", (base,), {n: boom for n in names if hasattr(base, n)})


HOSTILE_STR, HOSTILE_FLOAT, HOSTILE_INT = _booby_trapped(str), _booby_trapped(float), _booby_trapped(int)
HOSTILE_KEY = type("HostileKey", (HOSTILE_STR,), {"__hash__": str.__hash__})  # a dict key must hash to be one


@given(selected=st.lists(st.text(st.characters(blacklist_categories=("Cc",)), min_size=1, max_size=8), max_size=4),
       wrap=st.lists(st.booleans(), min_size=8, max_size=8),
       count=st.integers(0, 3), note=st.text(max_size=8).filter(lambda t: "\x00" not in t))
def test_a_result_built_of_hostile_subclasses_is_read_as_plain_values(
        selected: list[str], wrap: list[bool], count: int, note: str) -> None:
    """Hostile probe, round 9: a str subclass whose ``__hash__`` raised, a float subclass whose ``__float__``
    raised, returned in a result, crashed the harness later (an INCOMPLETE run, exit 2, "RuntimeError: hash boom")
    instead of being read. ``checked_result`` now returns a copy of built-in types only (the same text and
    numbers), and never calls the system's methods on them."""
    from harness.replay._shapes import checked_result

    def maybe(i: int, value: Any, hostile: type) -> Any:
        return hostile(value) if wrap[i] else value
    result = RecallResult(tuple(maybe(0, s, HOSTILE_STR) for s in selected), maybe(1, "heuristic", HOSTILE_STR),
                          scores=tuple(maybe(2, float(i), HOSTILE_FLOAT) for i in range(len(selected))),
                          prompt=maybe(3, note, HOSTILE_STR),
                          details={maybe(4, "note", HOSTILE_KEY): maybe(5, note, HOSTILE_STR),
                                   "count": maybe(6, count, HOSTILE_INT), "ratio": maybe(7, 0.5, HOSTILE_FLOAT)})
    plain = checked_result("recall", result)
    assert type(plain) is RecallResult
    assert [type(s) for s in plain.selected] == [str] * len(selected)
    assert list(plain.selected) == selected  # compared as built-in values: no hostile method runs
    assert type(plain.strategy) is str
    assert plain.strategy == "heuristic"
    assert [type(x) for x in plain.scores] == [float] * len(selected)
    assert {type(k) for k in plain.details} == {str}
    assert [type(v) for v in plain.details.values()] == [str, int, float]
    assert dict(plain.details) == {"note": note, "count": count, "ratio": 0.5}


def test_a_result_with_more_items_than_a_result_can_hold_is_the_systems_failure() -> None:
    """Hostile probe, round 9: 2,000,000 selections took over a minute a scenario to judge."""
    import pytest

    from harness.errors import SystemFailure
    from harness.replay._shapes import MAX_RESULT_ITEMS, checked_result

    assert checked_result("recall", RecallResult(("a",) * MAX_RESULT_ITEMS, "heuristic")).selected[0] == "a"
    with pytest.raises(SystemFailure, match=r"recall\(\) returned a RecallResult with selected holds more than 10,000"):
        checked_result("recall", RecallResult(("a",) * (MAX_RESULT_ITEMS + 1), "heuristic"))

    class Lying(tuple):  # type: ignore[type-arg]
        def __len__(self) -> int:
            return 1
    with pytest.raises(SystemFailure, match=r"selected holds more than 10,000 items"):  # whatever its __len__ says
        checked_result("recall", RecallResult(Lying(("a",) * 200_000), "heuristic"))


def test_a_records_entries_are_the_stores_content_and_never_cut() -> None:
    """The bound is for an operation's answer; ``documents()`` is the store itself: a topic file of 20,000 entries
    (a raw seed can hold that many) is read whole."""
    from harness.replay._shapes import checked_records
    from harness.system import MemoryRecord, RecordEntry

    record = MemoryRecord("a.md", "user", "t", "x", entries=tuple(RecordEntry(str(i), "", "") for i in range(20_000)))
    assert [e.summary for e in checked_records([record])[0].entries] == [str(i) for i in range(20_000)]
