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
        from harness.otel_setup import build_telemetry

        self.config = config
        self.setup = build_telemetry({})
        self.results: list[Any] = []
        self.models: dict[str, Any] = {}

    def model(self, suite_dir: Path) -> Any:
        from harness.runner import ModelSpec, RunConfig, _Worker

        cassettes = self.config.getoption("--memharness-cassettes") or str(suite_dir / "cassettes")
        if cassettes not in self.models:
            self.models[cassettes] = _Worker(RunConfig(("model",), ModelSpec(Path(cassettes)))).model
        return self.models[cassettes]


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
        from harness.scenario_load import load_scenario

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
        from harness.replay import replay
        from harness.runner import scripted_model

        state = self.config.stash[_STATE_KEY]
        model = None
        if self.strategy == "model":
            model = scripted_model(self.scenario.scripted_model) if self.scenario.scripted_model is not None \
                else state.model(self.scenario.path.parent)
        result = replay(self.scenario, strategy=self.strategy, telemetry=state.setup.telemetry, model=model)
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
    state.setup.shutdown()
    if not gates_path or not state.results:
        return
    from harness.gates import evaluate, load_gates
    from harness.summary import summarize

    strategies = list(dict.fromkeys(r.strategy for r in state.results))
    failed = [g for g in evaluate(load_gates(Path(gates_path)), summarize(state.results, strategies)) if not g.passed]
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    for g in failed:
        if reporter is not None:
            reporter.write_line(f"memharness GATE FAILED: {g.gate.label} (value {g.value}) {g.detail}".rstrip(), red=True)
    if failed and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
