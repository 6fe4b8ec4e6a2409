"""Two tiers of tests: the bare ``python -m pytest`` (the README's command) runs the quick tier; tests marked
``slow`` run with ``--slow`` (both tiers), ``-m slow`` (that tier alone, as ``.ci/run`` does) or when the command
names their files.

A test is ``slow`` when it starts a live server or a browser (Phoenix, Chromium, a local model), replays the shipped
suite end to end (full runs, suite mutants, sensitivity, the pytest plugin under xdist, the fuzzer, the benchmarks),
imports litellm (3-4 s of CPU in each process that does), or measures scaling, crash loops or races. The last but
one is enforced: a test not marked ``slow`` that imports litellm fails, naming the mark.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

SLOW_TIER = ("the slow tier (live Phoenix, Chromium and model servers; end-to-end runs of the shipped suite, its "
             "mutants, benchmarks and the fuzzer; tests that import litellm; scaling, crash-loop and race tests)")
HEAVY_IMPORT = "litellm"
_DESELECTED = pytest.StashKey[int]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow", action="store_true", default=False,
                     help=f"also run {SLOW_TIER}; `-m slow` runs that tier alone")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"slow: {SLOW_TIER}; left out of a bare `pytest` (tests/_tiers.py)")


def runs_slow_tier(config: pytest.Config) -> bool:
    """Slow tests run with ``--slow``, under a ``-m`` expression (which then decides alone), and when the command
    names test paths itself: only the bare ``pytest`` over ``testpaths`` leaves them out."""
    return bool(config.getoption("--slow") or config.option.markexpr
                or config.args_source is not pytest.Config.ArgsSource.TESTPATHS)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if runs_slow_tier(config):
        return
    slow = [item for item in items if "slow" in item.keywords]
    config.stash[_DESELECTED] = len(slow)
    if hasattr(config, "workeroutput"):  # an xdist worker: the controller prints the banner
        config.workeroutput["slow_deselected"] = len(slow)
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if "slow" not in item.keywords]


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
    if not before and HEAVY_IMPORT in sys.modules and "slow" not in request.node.keywords:
        pytest.fail(f"{request.node.nodeid} imported {HEAVY_IMPORT} (3-4 s of CPU in every process that does): "
                    "mark it @pytest.mark.slow", pytrace=False)
