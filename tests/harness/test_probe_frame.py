"""The probe frame is built a column at a time (issue 34: a dict per row was the evaluation's largest transient
object); it must be the frame ``DataFrame.from_records`` builds from those rows, for any mix of probes, except
that its numbers are float64."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.evaluation._parts import _frame_row, probe_frame
from harness.replay import Probe, TokenUsage

VALUES = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=True), st.text(max_size=3))
METRICS = st.dictionaries(st.sampled_from(["f1", "recall", "index.lines", "index.over", "mrr", "ok"]), VALUES,
                          max_size=5)


@st.composite
def probes(draw: Any) -> Probe:
    metrics = draw(METRICS)
    if draw(st.booleans()):
        metrics["index"] = draw(st.dictionaries(st.sampled_from(["lines", "bytes"]), VALUES, max_size=2))
    return Probe(scenario=draw(st.sampled_from(["a", "b"])), step=draw(st.integers(0, 3)),
                 kind=draw(st.sampled_from(["recall", "check", "extract"])), strategy=draw(st.sampled_from(["h", "m"])),
                 query=draw(st.text(max_size=4)), selected=tuple(draw(st.lists(st.text(max_size=3), max_size=2))),
                 metrics=metrics, duration_ms=draw(st.floats(0, 100)),
                 tokens=TokenUsage(draw(st.integers(0, 3)), cost_usd=draw(st.none() | st.floats(0, 1))),
                 fallback_reason=draw(st.none() | st.text(max_size=3)), final=draw(st.booleans()),
                 skipped=draw(st.none() | st.just("not run")))


@settings(max_examples=80, deadline=None)
@given(st.lists(probes(), max_size=12))
def test_the_frame_is_the_one_from_records_builds(batch: list[Probe]) -> None:
    rows = [_frame_row(p) for p in batch if p.graded]
    got = probe_frame(batch)
    if not rows:
        assert list(got.columns) == ["scenario", "step", "kind", "strategy"]
        assert got.empty
        return
    expected = pd.DataFrame.from_records(rows)
    for column in expected.columns:  # numbers (and bools) as float64, None as NaN: 8 bytes a value (issue 34)
        if column not in ("scenario", "step", "kind", "strategy", "query", "selected", "fallback_reason"):
            values = [_as_float(v) for v in expected[column]]
            numeric = all(isinstance(v, float) for v in values)
            expected[column] = pd.Series(values, dtype="float64") if numeric else pd.Series(values)
    pd.testing.assert_frame_equal(got, expected)


def _as_float(value: Any) -> Any:
    return math.nan if value is None else float(value) if isinstance(value, int | float) else value
