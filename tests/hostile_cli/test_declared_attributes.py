"""What a plug-in system declares in ``recall_limit`` and ``strategies``, generated (hostile probe, round 12).

On the old code ``recall_limit`` 5.0, "5", -3 or None was silently replaced by the spec's 5 (the run PASSED),
True was used as k=True, and 10**5000 ended the run INCOMPLETE (the harness blamed: str() of too many digits);
``strategies = [5]`` ended the run INCOMPLETE (TypeError in the skip reason's join), and a generator was read once,
then every strategy was skipped. Now each is read once, whole, and anything but a whole number from 1 to 10,000 /
a set, list or tuple of names is the system's failure, one line naming the attribute.
"""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.errors import SYSTEM_FAILED, SystemFailure
from harness.system import RECALL_LIMIT_MAX, declared_recall_limit, reference_factory, strategy_problem
from tests.harness.conftest import SCENARIOS


class _TrappedSet(frozenset[str]):
    def __iter__(self) -> Any:
        raise RuntimeError("iter boom")


LEAF = st.one_of(st.none(), st.booleans(), st.integers(-2**80, 2**80), st.just(10**5000), st.floats(),
                 st.text(max_size=4), st.binary(max_size=3))
VALUE = st.one_of(LEAF, st.lists(LEAF, max_size=3), st.frozensets(st.text(max_size=4), max_size=3),
                  st.lists(st.sampled_from(["heuristic", "bm25", "model"]), max_size=3).map(tuple),
                  st.lists(LEAF, max_size=3).map(lambda v: (x for x in v)), st.just(_TrappedSet({"heuristic"})),
                  st.dictionaries(st.text(max_size=3), LEAF, max_size=2))


@settings(max_examples=800, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(limit=VALUE, strategies=VALUE)
def test_a_declaration_is_read_whole_or_is_the_systems_failure(limit: Any, strategies: Any) -> None:
    system = types.SimpleNamespace(recall_limit=limit, strategies=strategies, name="mine")
    try:
        read = declared_recall_limit(system)
    except SystemFailure as exc:
        failure = str(exc)
    else:
        failure = ""
        assert type(read) is int
        assert 1 <= read <= RECALL_LIMIT_MAX
        assert read == limit
    assert not failure or (failure.startswith(f"{SYSTEM_FAILED}: its recall_limit is ") and "\n" not in failure)
    try:
        problem = strategy_problem(system, "heuristic")
    except SystemFailure as exc:
        failure = str(exc)
    else:
        failure = ""
        assert strategies is None or (type(strategies) in (set, frozenset, list, tuple)
                                      and all(type(s) is str for s in strategies))
        assert problem is None or "\n" not in problem
    assert not failure or (failure.startswith(f"{SYSTEM_FAILED}: its strategies is ") and "\n" not in failure)


class _FloatLimit:
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return 5.0 if name == "recall_limit" else getattr(self._inner, name)


def factory(workdir: Path, clock: Any, model: Any, events: Any) -> _FloatLimit:
    return _FloatLimit(reference_factory(workdir, clock, model, events))


def test_a_float_recall_limit_fails_the_run_as_the_systems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    code = main(["run", str(SCENARIOS / "recall" / "multi-fact.yaml"), "--system", f"{__name__}:factory",
                 "--no-gates", "--out", str(out)], environ={})
    capsys.readouterr()
    assert code == 1  # PASSED (exit 0) on the old code: 5.0 was read as the spec's 5
    (result,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert not result["error"]
    assert any("its recall_limit is float 5.0" in f for f in result["failures"]), result["failures"]
