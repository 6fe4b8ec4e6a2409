"""Two tiers of tests: the bare ``python -m pytest`` (the README's command) runs the quick tier; tests marked
``slow`` run with ``--slow`` (both tiers), ``-m slow`` (that tier alone, as ``.ci/run`` does), and whenever the
command chooses tests itself (``-k``, named paths, ``--lf`` for the ones that failed).

A test is ``slow`` when it
- starts a live server or a browser (Phoenix, Chromium, a local model);
- replays the shipped suite, or a whole area of it, end to end more than once (full runs, the sqlite area in both
  modes, runs in parallel worker processes and shards, suite mutants, sensitivity, the pytest plugin under xdist,
  the fuzzer, the benchmarks);
- imports litellm (3-4 s of CPU in each process that does): enforced, a test not marked ``slow`` that imports it
  fails, naming the mark;
- or measures scaling, crashes or races (inputs grown to read a slope, SIGKILL loops, a killed parent, racing
  processes).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

SLOW_TIER = ("the slow tier (live Phoenix, Chromium and model servers; end-to-end runs of the shipped suite, its "
             "areas, mutants, benchmarks and the fuzzer; tests that import litellm; scaling, crash and race tests)")
HEAVY_IMPORT = "litellm"
_DESELECTED = pytest.StashKey[int]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow", action="store_true", default=False,
                     help=f"also run {SLOW_TIER}; `-m slow` runs that tier alone")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"slow: {SLOW_TIER}; left out of a bare `pytest` (tests/_tiers.py)")


def _is_slow(item: pytest.Item) -> bool:
    return item.get_closest_marker("slow") is not None


def _bare(config: pytest.Config) -> bool:
    """No paths named: ``pytest`` at the root (testpaths), in a subdirectory, or ``pytest tests`` itself."""
    source = config.args_source
    if source is not pytest.Config.ArgsSource.ARGS:
        return True
    roots = {(config.rootpath / p).resolve() for p in config.getini("testpaths")}
    return bool(roots) and all((config.invocation_params.dir / a).resolve() in roots for a in config.args)


def _runs_slow_tier(config: pytest.Config) -> bool:
    """Slow tests run with ``--slow``, and whenever the command chooses tests itself: a ``-m`` or ``-k``
    expression (which then decides alone) or named paths. A bare ``pytest`` leaves them out."""
    return bool(config.getoption("--slow") or config.option.markexpr or config.option.keyword or not _bare(config))


def _last_failed(config: pytest.Config) -> set[str]:
    """Under ``--lf`` / ``--ff``, the slow tests that failed last time run again (a slow failure from ``.ci/run``
    must not vanish from ``pytest --lf``)."""
    if not (config.getoption("lf", False) or config.getoption("failedfirst", False)) or config.cache is None:
        return set()
    return set(config.cache.get("cache/lastfailed", {}))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _runs_slow_tier(config):
        return
    failed = _last_failed(config)
    slow = [item for item in items if _is_slow(item) and item.nodeid not in failed]
    config.stash[_DESELECTED] = len(slow)
    if hasattr(config, "workeroutput"):  # an xdist worker: the controller prints the banner
        config.workeroutput["slow_deselected"] = len(slow)
    if slow:
        config.hook.pytest_deselected(items=slow)
        dropped = {id(item) for item in slow}
        items[:] = [item for item in items if id(item) not in dropped]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """xdist's controller collects nothing itself: it learns the count from a worker."""
    count = getattr(node, "workeroutput", {}).get("slow_deselected")
    if count is not None:
        node.config.stash[_DESELECTED] = count


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    count = config.stash.get(_DESELECTED, 0)
    if count and not hasattr(config, "workerinput"):
        terminalreporter.write_line(f"!!! {count} tests of {SLOW_TIER} were not run: `python -m pytest -m slow` "
                                    "runs them (.ci/run does) !!!", yellow=True, bold=True)


@pytest.fixture(autouse=True)
def _quick_tier_never_imports_litellm(request: pytest.FixtureRequest) -> Iterator[None]:
    before = HEAVY_IMPORT in sys.modules
    yield
    if not before and HEAVY_IMPORT in sys.modules and not _is_slow(request.node):
        pytest.fail(f"{request.node.nodeid} imported {HEAVY_IMPORT} (3-4 s of CPU in every process that does): "
                    "mark it @pytest.mark.slow", pytrace=False)
