"""Records pickle as their class and field values (``_records._by_fields``): a run's spool and its ``--jobs``
workers carry them that way. Every field must come back as it went, whatever fields a record gains."""

from __future__ import annotations

import pickle
from dataclasses import fields

import pytest

from harness.replay import Probe, ScenarioResult, TokenUsage
from harness.replay._spool import ResultSpool


@pytest.mark.parametrize("cls", [TokenUsage, Probe, ScenarioResult])
def test_every_field_comes_back_as_it_went(cls: type) -> None:
    values = {f.name: f"value of {f.name}" for f in fields(cls)}  # distinct, none a default
    record = cls(**values)
    back = pickle.loads(pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL))
    assert type(back) is cls
    assert {f.name: getattr(back, f.name) for f in fields(cls)} == values


def test_a_result_read_back_from_the_spool_equals_the_one_added() -> None:
    probe = Probe("s", 2, "recall", "heuristic", "q", ("a", "b"), ("a",), ("a",), {"recall.f1": 0.5, "ok": True},
                  tokens=TokenUsage(1, 2, 3, 1, 0.25), k=5, scores=(1.5, 0.5), final=True, skipped=None)
    result = ScenarioResult("s", "heuristic", False, ("missed a",), (probe, probe), "trace", error=None,
                            duration_ms=3.5, tags=("t",), path="s.yaml", system_ms=1.25)
    spool = ResultSpool([result])
    try:
        assert list(spool) == [result]
        assert spool[0].probes[0].strategy_used == "heuristic"  # __post_init__'s default survives the trip
    finally:
        spool.close()
