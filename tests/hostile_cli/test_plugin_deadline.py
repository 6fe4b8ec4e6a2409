"""A plugin metric or ranker that never returns (hostile probe, round 13; generated over the ways code hangs).

On the old code a metric that hung held ``memharness run`` forever after the replay (metrics are scored in the run's
own process, with no deadline), and a ranker that hung inside the reference's recall was cut only by the system's
per-operation timeout, blamed on the system under test. Now each plugin call has ``PLUGIN_TIMEOUT_S``: past it, one
``HarnessError`` line names the plugin; a system operation's own, shorter deadline still fires as its own, and a
longer one is left armed with what is left of it.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import harness.errors
from harness import plugins
from harness.errors import SYSTEM_FAILED, HarnessError, SystemFailure
from harness.replay import Probe, ScenarioResult
from harness.replay._observed import _contained
from harness.systems.files import PluginRanker
from memory_core.files.topic import TopicDoc
from tests.harness.conftest import SCENARIOS
from tests.hostile_cli._support import cli

LIMIT = 0.3


def _sleep() -> None:
    time.sleep(3600)


def _spin() -> None:
    while True:
        pass


def _spin_swallowing() -> None:  # catches Exception: the deadline must not be one
    while True:
        try:
            while True:
                pass
        except Exception:
            continue


def _blocked_read() -> None:
    r, _w = os.pipe()
    os.read(r, 1)


def _event_wait() -> None:
    threading.Event().wait()


def _slow_then_answer() -> None:  # swallows even BaseException once, then returns late: still refused
    with contextlib.suppress(BaseException):
        time.sleep(3600)


HANGS: dict[str, Callable[[], None]] = {f.__name__.strip("_"): f for f in (_sleep, _spin, _spin_swallowing,
                                                                            _blocked_read, _event_wait,
                                                                            _slow_then_answer)}


@pytest.fixture(autouse=True)
def _short_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(harness.errors, "PLUGIN_TIMEOUT_S", LIMIT)
    monkeypatch.setattr(plugins, "REGISTRY", {})


def _hanging(how: str) -> Callable[..., Any]:
    def call(*_: object) -> object:
        HANGS[how]()
        return 1.0 if how != "slow_then_answer" else [1.0] * 3
    return call


@pytest.mark.parametrize("how", sorted(HANGS))
def test_a_metric_that_hangs_is_an_error_naming_it(how: str) -> None:
    plugins.metric("recall.hangs")(_hanging(how))
    probe = Probe("s", 4, "recall", "heuristic", expected=("f",))
    began = time.monotonic()
    with pytest.raises(HarnessError) as caught:
        plugins.score_results([ScenarioResult("s", "heuristic", True, (), (probe,), "0" * 32)])
    assert time.monotonic() - began < LIMIT + 2  # old code: never returned
    assert str(caught.value).startswith("plugin metric recall.hangs")
    assert "on s [heuristic] step 4" in str(caught.value)
    assert f"within {LIMIT:g} s" in str(caught.value)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # nothing left armed
    assert signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, signal.default_int_handler, None)


DOCS = [TopicDoc("user", f"user/t{i}.md", f"title {i}", f"desc {i}", f"body {i}") for i in range(3)]


@pytest.mark.parametrize(("how", "outer"), list(itertools.product(sorted(HANGS), [0.0, LIMIT / 3, LIMIT * 20])))
def test_a_ranker_that_hangs_meets_the_nearest_deadline(how: str, outer: float) -> None:
    """Inside a system operation (``outer`` seconds; 0: none) as the reference's recall calls it."""
    ranker = PluginRanker("hangs", _hanging(how))
    began = time.monotonic()
    with pytest.raises(HarnessError) as caught, _contained("recall", outer):
        ranker.rank("query", DOCS, limit=5)
    spent = time.monotonic() - began
    if outer and outer < LIMIT:  # the operation's deadline came first: the system's operation timed out
        assert isinstance(caught.value, SystemFailure), caught.value
        assert str(caught.value).startswith(f"{SYSTEM_FAILED}: recall() did not return within")
        assert spent < LIMIT + 1
    else:
        assert not isinstance(caught.value, SystemFailure)
        assert str(caught.value).startswith("plugin strategy hangs failed: it did not return within")
        assert spent < LIMIT + 2
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_an_enclosing_deadline_goes_on_with_what_is_left() -> None:
    ranker = PluginRanker("quick", lambda q, docs: [1.0] * len(docs))
    with _contained("recall", 50.0):
        ranker.rank("query", DOCS, limit=5)
        left = signal.getitimer(signal.ITIMER_REAL)[0]
        assert 45.0 < left <= 50.0  # re-armed, not dropped (or the operation would have no deadline after)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_the_run_says_it_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plugin = tmp_path / "hanging_metric.py"
    plugin.write_text(textwrap.dedent("""\
        import time
        from harness.plugins import metric

        @metric("recall.hangs")
        def hangs(probe):
            while True:
                time.sleep(1)
    """))
    began = time.monotonic()
    o = cli(["run", str(SCENARIOS / "recall" / "multi-fact.yaml"), "--plugin", str(plugin), "--no-gates",
             "--jobs", "1", "--out", str(tmp_path / "out")], capsys)
    assert time.monotonic() - began < 60
    assert o.code == 2, o.err
    (line,) = [x for x in o.err.splitlines() if "recall.hangs" in x]
    assert line.startswith("memharness: plugin metric recall.hangs")
    assert f"within {LIMIT:g} s" in line
