"""A run over two systems relabels the second one's results (``heuristic@sqlite``) as each is kept: it never holds
that system's results twice, unlabelled and labelled (issue 34: peak memory flat in the suite's size)."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.replay import RunConfig, ScenarioResult, run_plan
from harness.scenario import Scenario, load_all

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> list[Scenario]:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import bench_suite  # the bench's generated suites: recall, extraction and dream scenarios, varied
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return load_all([bench_suite.write_suite(tmp_path_factory.mktemp("generated"), 6)])


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(2, 6))
def test_the_second_systems_results_are_relabelled_as_they_are_kept(generated: list[Scenario], n: int) -> None:
    part = generated[:n]
    bare: list[int] = []

    def count() -> int:  # results under the bare label: the first system's n, and the second's not yet relabelled
        return sum(type(o) is ScenarioResult and o.strategy == "heuristic" for o in gc.get_objects())

    def progress(result: ScenarioResult) -> None:
        if result.strategy == "heuristic@sqlite":
            bare.append(count() - before)

    gc.collect()
    before = count()  # another test's, still alive in this process

    run = run_plan([("reference", None, part), ("sqlite", "sqlite", part)], RunConfig(("heuristic",)),
                   primary="reference", progress=progress)
    assert [r.strategy for r in run.results] == ["heuristic"] * n + ["heuristic@sqlite"] * n
    assert [r.scenario for r in run.results] == [s.id for s in part] * 2
    assert len(bare) == n
    assert max(bare) <= n + 1  # the first system's, and the one being kept (all n of the second's, before)
