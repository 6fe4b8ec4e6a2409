"""``memharness run`` holds each loaded scenario as its pickle until it replays (``harness.scenario._packed``): over
a generated suite and the shipped one, a packed scenario reads as the scenario it packs, replays whole, and the
loaded suite holds a fraction of the memory (issue 34: peak memory flat in the suite's size)."""

from __future__ import annotations

import dataclasses
import gc
import pickle
import sys
import tracemalloc
from pathlib import Path

import pytest

from harness.scenario import Scenario, load_all, model_faults, unpacked
from harness.scenario._packed import PackedScenario
from tests.helpers import in_fresh_interpreter

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"


def _generated(root: Path, n: int) -> Path:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import bench_suite  # the bench's generated suites: recall, extraction and dream scenarios, varied
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return bench_suite.write_suite(root, n)


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _generated(tmp_path_factory.mktemp("generated"), 300)


@pytest.mark.parametrize("which", ["generated", "shipped"])
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_packed_scenario_is_the_scenario(suite: Path, which: str, jobs: int) -> None:
    """With ``jobs`` 2 in a fresh interpreter: the load forks a pool (``in_fresh_interpreter`` says why)."""
    if jobs == 1:
        packed_is_whole(str(suite), which, str(jobs))
    else:
        in_fresh_interpreter(__name__, "packed_is_whole", str(suite), which, str(jobs))


def packed_is_whole(where: str, which: str, count: str) -> None:
    suite, jobs = Path(where), int(count)
    paths = [suite] if which == "generated" else [SCENARIOS]
    whole = load_all(paths)
    packed = load_all(paths, jobs=jobs, packed=True)
    assert [type(p) for p in packed] == [PackedScenario] * len(whole)
    assert [unpacked(p) for p in packed] == whole
    for s, p in zip(whole, packed, strict=True):
        for f in dataclasses.fields(Scenario):  # kept beside the pickle or read from a fresh copy: the same
            assert getattr(p, f.name) == getattr(s, f.name), (s.id, f.name)
        assert p.digest == s.digest
        assert model_faults(p) == model_faults(s) == any(type(x).__name__ == "FaultStep" and x.model is not None
                                                        for x in s.steps)
        again = pickle.loads(pickle.dumps(p))  # to a --jobs worker, the side process, an isolated child
        assert type(again) is PackedScenario
        assert unpacked(again) == s
        assert again.id == s.id
        assert unpacked(s) is s


def _held(paths: list[Path], packed: bool) -> int:
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        loaded = load_all(paths, packed=packed)
        gc.collect()  # what is held, not what the collector has yet to free (a full collection clears free lists)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert loaded
    return held


def test_a_packed_suite_holds_a_fraction_of_the_memory(suite: Path) -> None:
    whole, packed = _held([suite], False), _held([suite], True)
    assert packed < 0.15 * whole, (packed, whole)  # ~0.5 against ~5.8 KB a scenario (its pickle on the shelf)


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_pickles_of_a_load_are_on_its_shelf_not_in_memory(suite: Path, jobs: int) -> None:
    """A run's loaded scenarios hold where their pickles are (~60 bytes), not the pickles: those are on one
    temporary file per load, those parsed by ``--jobs`` workers too (shelved as they come back); a scenario sent to
    another process (the side process, a worker) carries its pickle and keeps it in memory there (issue 34)."""
    if jobs == 1:
        pickles_on_shelf(str(suite), str(jobs))
    else:
        in_fresh_interpreter(__name__, "pickles_on_shelf", str(suite), str(jobs))


def pickles_on_shelf(where: str, count: str) -> None:
    from harness.scenario._packed import Shelf

    suite, jobs = Path(where), int(count)
    packed = load_all([suite], jobs=jobs, packed=True)
    shelves = {id(p._shelf) for p in packed}
    assert len(shelves) == 1
    assert isinstance(packed[0]._shelf, Shelf)
    assert all(isinstance(p._blob, int) for p in packed)
    sent = pickle.loads(pickle.dumps(packed[-1]))
    assert sent._shelf is None
    assert isinstance(sent._blob, bytes)
    assert unpacked(sent) == unpacked(packed[-1])
    assert load_all([suite], packed=True)[0]._shelf is not packed[0]._shelf  # a load, a shelf
