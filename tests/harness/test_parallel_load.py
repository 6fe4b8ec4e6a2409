"""``memharness run --jobs N`` parses a large suite in worker processes: the scenarios, their order and the first
error are those of a serial load.

Each load that forks its pool runs in a fresh interpreter (``_fresh``): forked from a pytest-xdist worker, whose
execnet thread may hold a lock at that moment, a pool child can wait on that lock for ever (a ``multiprocessing``
pool forked so hung for 23 minutes in round 15's CI)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from harness.errors import ScenarioError
from harness.scenario import _parallel, load_all
from tests.helpers import in_fresh_interpreter

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def _fresh(check: str, *args: str) -> None:
    in_fresh_interpreter(__name__, check, *args)


def same_load() -> None:
    serial = load_all([SCENARIOS])
    assert len(serial) >= 2 * _parallel.MIN_FILES_PER_JOB  # large enough that the workers are used
    assert load_all([SCENARIOS], jobs=2) == serial


def test_a_parallel_load_is_the_serial_load() -> None:
    _fresh("same_load")


def same_first_error(where: str, broken: str) -> None:
    suite = Path(where) / "suite"
    shutil.copytree(SCENARIOS, suite, ignore=shutil.ignore_patterns("cassettes*"))
    files = sorted(p for p in suite.rglob("*.yaml") if p.name != "gates.toml")
    for path in (files[len(files) // 3], files[-5])[:int(broken)]:  # one wrong file, then a second one later too
        path.write_text(path.read_text(encoding="utf-8") + "\nsteps: 7\n", encoding="utf-8")
    with pytest.raises(ScenarioError) as serial:
        load_all([suite])
    with pytest.raises(ScenarioError) as parallel:
        load_all([suite], jobs=2)
    assert str(parallel.value) == str(serial.value)
    assert str(files[len(files) // 3]) in str(parallel.value)


@pytest.mark.parametrize("broken", [1, 2])
def test_the_first_error_is_the_serial_one(tmp_path: Path, broken: int) -> None:
    _fresh("same_first_error", str(tmp_path), str(broken))


def test_few_files_stay_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_pool(*args: object, **kwargs: object) -> None:
        raise AssertionError("a pool started for a small suite")

    monkeypatch.setattr(_parallel, "ProcessPoolExecutor", no_pool)
    assert load_all([SCENARIOS / "dream"], jobs=2) == load_all([SCENARIOS / "dream"])


_PARENT: list[int] = []


def _dies_in_a_worker(item: tuple[Path, Path]) -> object:
    from harness.scenario import _load

    if os.getpid() != _PARENT[0]:
        os._exit(3)  # a worker killed (out of memory, a signal): the pool breaks
    return _load.load_scenario(item[0], suite_root=item[1])


def load_after_dead_workers() -> None:
    from harness.scenario import _load

    _PARENT[:] = [os.getpid()]
    serial = load_all([SCENARIOS])
    _load._load_found = _dies_in_a_worker  # type: ignore[assignment]  # a fresh interpreter: no need to put it back
    assert load_all([SCENARIOS], jobs=2) == serial


def test_workers_that_die_leave_the_load_to_this_process() -> None:
    _fresh("load_after_dead_workers")
