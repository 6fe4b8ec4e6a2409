"""pytest plugin: ``pytest --memharness scenarios/`` turns each scenario × strategy into a test item.

A failing item's message is the failed expectation (naming the step and YAML line); the trace id is recorded as
the JUnit property ``otel.trace_id``. ``--memharness-gates FILE`` evaluates gates over the session's results and
fails the session (exit 1) when one fails. The plugin does nothing unless ``--memharness`` is given.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("memharness")
    group.addoption("--memharness", action="store_true", default=False, help="collect scenario YAML files as tests")
    group.addoption("--memharness-strategy", default="heuristic", help="comma-separated strategies (default heuristic)")
    group.addoption("--memharness-cassettes", default=None, help="cassette directory for the model strategy")
    group.addoption("--memharness-gates", default=None, help="gates TOML evaluated over the session's results")


class _State:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.results: list[Any] = []
        self.workers: dict[str, Any] = {}

    def worker(self, suite_dir: Path) -> Any:
        """One public ``harness.replay.Worker`` per cassette directory."""
        from harness.replay import ModelSpec, RunConfig, Worker

        cassettes = self.config.getoption("--memharness-cassettes") or str(suite_dir / "cassettes")
        if cassettes not in self.workers:
            self.workers[cassettes] = Worker(RunConfig(None, ModelSpec(Path(cassettes))))
        return self.workers[cassettes]


_STATE_KEY = pytest.StashKey[_State]()


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--memharness", default=False):
        config.stash[_STATE_KEY] = _State(config)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if not parent.config.getoption("--memharness", default=False):
        return None
    if file_path.suffix in (".yaml", ".yml") and "cassettes" not in file_path.parts:
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


class ScenarioFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        from harness.scenario import load_scenario

        scenario = load_scenario(self.path, suite_root=Path(str(self.config.rootpath)))
        strategies = [s.strip() for s in self.config.getoption("--memharness-strategy").split(",") if s.strip()]
        for strategy in strategies:
            if not scenario.strategies or strategy in scenario.strategies:
                yield ScenarioItem.from_parent(self, name=f"{scenario.id}[{strategy}]", scenario=scenario,
                                               strategy=strategy)


class ScenarioFailure(Exception):
    """A scenario expectation did not hold."""


class ScenarioItem(pytest.Item):
    def __init__(self, *, scenario: Any, strategy: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario
        self.strategy = strategy

    def runtest(self) -> None:
        state = self.config.stash[_STATE_KEY]
        worker = state.worker(self.scenario.path.parent)
        result = worker.run_one(self.scenario, self.strategy)
        worker.setup.jsonl.take()
        state.results.append(result)
        self.user_properties.append(("otel.trace_id", result.trace_id))
        if result.error:
            raise ScenarioFailure(result.error)
        if result.failures:
            raise ScenarioFailure("\n".join(result.failures))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ScenarioFailure):
            return f"{self.scenario.path}: {excinfo.value}"
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.scenario.path, 0, f"scenario {self.scenario.id} [{self.strategy}]"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _STATE_KEY not in session.config.stash:
        return
    state = session.config.stash[_STATE_KEY]
    gates_path = session.config.getoption("--memharness-gates")
    for worker in state.workers.values():
        worker.shutdown()
    if not gates_path or not state.results:
        return
    from harness.evaluation import evaluate_run, load_gates

    strategies = list(dict.fromkeys(r.strategy for r in state.results))
    summary = evaluate_run(state.results, strategies, gates=load_gates(Path(gates_path)))
    failed = [g for g in summary.gates if not g.passed]
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    for g in failed:
        if reporter is not None:
            reporter.write_line(f"memharness GATE FAILED: {g.name} (value {g.value}) {g.detail}".rstrip(), red=True)
    if failed and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
