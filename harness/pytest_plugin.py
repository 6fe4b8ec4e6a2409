"""pytest plugin: ``pytest --memharness scenarios/`` turns each scenario × strategy into a test item.

- The model strategy replays the shipped cassettes by default: the nearest ``cassettes/`` directory at or above
  the scenario's folder (``--memharness-cassettes DIR`` overrides it). Nothing reaches a network.
- A scenario that does not run with a requested strategy (its ``strategies:`` list) is reported as SKIPPED with
  the reason, never dropped; so is one whose system lacks a capability.
- A failing item shows the failed expectations (step, YAML line, message) in a few lines, no traceback; the trace
  id is recorded as the JUnit property ``otel.trace_id``.
- At the end a terminal summary prints the metrics per strategy, the comparisons in words and the gates
  (``--memharness-gates FILE``; a failing gate fails the session with exit 1).
- Under pytest-xdist (``-n auto``) each worker replays its share and sends its results to the controller
  (``workeroutput``), which evaluates the whole session once.

The plugin does nothing unless ``--memharness`` is given.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_WORKER_KEY = "memharness_results"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("memharness")
    group.addoption("--memharness", action="store_true", default=False, help="collect scenario YAML files as tests")
    group.addoption("--memharness-strategy", default="heuristic",
                    help="comma-separated strategies, e.g. heuristic,model (default heuristic)")
    group.addoption("--memharness-cassettes", default=None,
                    help="cassette directory for the model strategy (default: the nearest cassettes/ at or above "
                         "each scenario's folder)")
    group.addoption("--memharness-gates", default=None, help="gates TOML evaluated over the session's results")


def find_cassettes(start: Path, root: Path) -> Path | None:
    """The nearest ``cassettes/`` holding a cassette set or a shelf of sets, from ``start`` upwards (stopping at
    ``root`` when ``start`` lies under it): ``harness.replay.nearest_cassettes``."""
    from harness.replay import nearest_cassettes

    return nearest_cassettes(start, root)


class _State:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.results: list[Any] = []
        self.workers: dict[str, Any] = {}
        self.summary: Any = None
        self.error: str | None = None

    def worker(self, suite_dir: Path) -> Any:
        """One public ``harness.replay.Worker`` per cassette directory."""
        from harness.replay import ModelSpec, RunConfig, Worker

        chosen = self.config.getoption("--memharness-cassettes")
        found = Path(chosen) if chosen else find_cassettes(suite_dir, Path(str(self.config.rootpath)))
        key = str(found or suite_dir / "cassettes")
        if key not in self.workers:
            self.workers[key] = Worker(RunConfig(None, ModelSpec(Path(key))))
        return self.workers[key]


_STATE_KEY = pytest.StashKey[_State]()


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--memharness", default=False):
        from harness.scenario import STRATEGY_NAMES

        for strategy in (s.strip() for s in config.getoption("--memharness-strategy").split(",")):
            if strategy not in STRATEGY_NAMES:  # as the CLI refuses it: a typo never runs nothing and passes
                raise pytest.UsageError(f"--memharness-strategy: unknown strategy {strategy!r}; expected one of "
                                        f"{', '.join(STRATEGY_NAMES)}")
        gates = config.getoption("--memharness-gates")
        if gates:  # a bad gates file is a usage error now, not after every test has run
            from harness.errors import HarnessError
            from harness.evaluation import load_gates

            try:
                load_gates(Path(gates))
            except HarnessError as exc:
                raise pytest.UsageError(f"--memharness-gates: {exc}") from None
        config.stash[_STATE_KEY] = _State(config)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if not parent.config.getoption("--memharness", default=False):
        return None
    if file_path.suffix in (".yaml", ".yml") and "cassettes" not in file_path.parts:
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


class ScenarioFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        from harness.errors import HarnessError
        from harness.scenario import load_scenario

        try:
            root = Path(str(self.config.rootpath))
            cassettes = find_cassettes(self.path.parent, root)
            # ids as the CLI names them: relative to the suite folder (the one holding cassettes/), else rootdir
            scenario = load_scenario(self.path, suite_root=cassettes.parent if cassettes else root)
        except HarnessError as exc:
            raise self.CollectError(str(exc)) from None
        strategies = [s.strip() for s in self.config.getoption("--memharness-strategy").split(",") if s.strip()]
        for strategy in strategies:
            item = ScenarioItem.from_parent(self, name=f"{scenario.id}[{strategy}]", scenario=scenario,
                                            strategy=strategy)
            if scenario.strategies and strategy not in scenario.strategies:
                item.add_marker(pytest.mark.skip(
                    reason=f"{scenario.id} runs only with strategies {', '.join(scenario.strategies)} (not {strategy})"))
            yield item


class ScenarioFailure(Exception):
    """A scenario expectation did not hold (or the scenario could not run)."""


class ScenarioItem(pytest.Item):
    def __init__(self, *, scenario: Any, strategy: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario
        self.strategy = strategy

    def runtest(self) -> None:
        from harness.errors import HarnessError

        state = self.config.stash[_STATE_KEY]
        try:
            worker = state.worker(self.scenario.path.parent)
            result = worker.run_one(self.scenario, self.strategy)
            worker.setup.jsonl.take()
        except HarnessError as exc:
            raise ScenarioFailure(f"could not run: {exc}") from None
        state.results.append(result)
        self.user_properties.append(("otel.trace_id", result.trace_id))
        if result.skipped:
            pytest.skip(result.skipped)
        if result.error:
            raise ScenarioFailure(result.error_text.strip().splitlines()[0])
        if result.failures:
            raise ScenarioFailure("\n".join(result.failures))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ScenarioFailure):
            lines = str(excinfo.value).splitlines()
            shown = "\n".join(f"  {line}" for line in lines[:8])
            more = f"\n  … and {len(lines) - 8} more" if len(lines) > 8 else ""
            return f"{self.scenario.path}: scenario {self.scenario.id} [{self.strategy}] failed:\n{shown}{more}"
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.scenario.path, 0, f"scenario {self.scenario.id} [{self.strategy}]"


def _rows(results: list[Any]) -> str:
    return json.dumps([{"result": r.to_row(), "probes": [p.to_row() for p in r.probes]} for r in results])


def _from_rows(text: str) -> list[Any]:
    from harness.replay import Probe, ScenarioResult

    return [ScenarioResult.from_row(d["result"], tuple(Probe.from_row(p) for p in d["probes"])) for d in json.loads(text)]


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: without xdist, pytest would refuse to start
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist controller: collect a worker's results."""
    config = node.config
    if _STATE_KEY in config.stash and _WORKER_KEY in getattr(node, "workeroutput", {}):
        config.stash[_STATE_KEY].results += _from_rows(node.workeroutput[_WORKER_KEY])


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _STATE_KEY not in session.config.stash:
        return
    state = session.config.stash[_STATE_KEY]
    for worker in state.workers.values():
        worker.shutdown()
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: hand the results to the controller, evaluate nothing here
        workeroutput[_WORKER_KEY] = _rows(state.results)
        return
    if not state.results:
        return
    from harness.errors import HarnessError
    from harness.evaluation import evaluate_run, load_gates

    gates_path = session.config.getoption("--memharness-gates")
    order = [s.strip() for s in session.config.getoption("--memharness-strategy").split(",") if s.strip()]
    results = sorted(state.results, key=lambda r: (r.scenario, order.index(r.strategy) if r.strategy in order else 99))
    strategies = [s for s in order if any(r.strategy == s for r in results)]
    try:
        gates = load_gates(Path(gates_path)) if gates_path else []
    except HarnessError as exc:
        state.error = str(exc)
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
        return
    state.summary = evaluate_run(results, strategies, gates=gates)
    state.results = results
    if any(not g.passed for g in state.summary.gates) and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if _STATE_KEY not in config.stash:
        return
    state = config.stash[_STATE_KEY]
    if state.error:
        terminalreporter.write_line(f"memharness: {state.error}", red=True)
    if state.summary is None:
        return
    from harness.reporting import closing_table

    terminalreporter.section("memharness summary")
    for line in closing_table(state.summary, state.results):
        terminalreporter.write_line(line)
    for g in state.summary.gates:
        if g.skipped:  # as the CLI says it: nothing measured it, so it neither passed nor failed
            terminalreporter.write_line(f"memharness gate skipped: {g.name} ({g.detail})", yellow=True)
        elif g.passed:
            terminalreporter.write_line(f"memharness gate passed: {g.name} (value {g.value})", green=True)
        else:
            terminalreporter.write_line(f"memharness GATE FAILED: {g.name} (value {g.value}) {g.detail}".rstrip(),
                                        red=True)
