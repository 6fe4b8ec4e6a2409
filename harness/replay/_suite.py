"""Run a suite: scenarios × strategies, serially, in parallel processes (``--jobs``) or as one shard of N."""

from __future__ import annotations

import atexit
import multiprocessing.util as mp_util
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from harness.errors import USER_INTERRUPT, HarnessError, child_signals, stop_if_asked
from harness.replay import _side
from harness.replay._cassette import Cassette, CassetteModel, ModelSpec
from harness.replay._factory import load_factory, shipped
from harness.replay._isolated import run_isolated
from harness.replay._models import ProbeContext, scripted_model
from harness.replay._plan import column_label, strategies_for
from harness.replay._proxy import PROXY_URL_ENV, ModelProxy, ProxyCall, proxy_for
from harness.replay._records import ScenarioResult
from harness.replay._replay import replay
from harness.replay._spool import ResultSpool
from harness.scenario import MODEL_STRATEGIES, STRATEGY_NAMES, Scenario, base_strategy, model_faults, unpacked
from harness.system import declared_strategies
from harness.telemetry import EncodedTrace, TelemetrySetup, build_telemetry, proxied_call_span
from memory_core.litellm_model import LiteLLMModel
from memory_core.model import Model


def needs_cassette_model(scenarios: Sequence[Scenario], requested: Sequence[str] | None,
                         factory: object = None) -> bool:
    """Whether some scenario will call the cassette-backed model (``factory``: a shipped system's, whose declared
    strategies count, read as a replay reads them)."""
    declared = declared_strategies(factory)

    def calls(x: str) -> bool:
        return base_strategy(x) in MODEL_STRATEGIES and (declared is None or base_strategy(x) in declared)

    return any(s.scripted_model is None and any(map(calls, strategies_for(s, requested))) for s in scenarios)


@dataclass(frozen=True)
class RunConfig:
    strategies: tuple[str, ...] | None
    """Requested strategies; None lets each scenario use its own ``strategies`` (default heuristic)."""
    model: ModelSpec | None = None
    jobs: int = 1
    shard: tuple[int, int] | None = None
    system: str | None = None
    """``package.module:factory`` of a custom system under test."""
    environ: Mapping[str, str] = field(default_factory=dict)
    run_id: str = ""
    """On every span and in summary.json; mixed into trace ids so runs never collide in a backend."""
    suite: str = "memharness"
    """The suite's name (the Phoenix project unless MEMHARNESS_PROJECT or OTEL_RESOURCE_ATTRIBUTES says otherwise)."""
    column_system: str = ""
    """Set for a system after the run's first: its results are the ``strategy@system`` columns, and its trace ids
    are seeded apart from the first system's."""


class TraceSink(Protocol):
    """Takes each scenario's traces as it finishes (OTLP-JSON requests, or lines a ``--jobs`` worker encoded) with
    the scenario's place in the run (they may arrive out of order: the side process)."""

    def __call__(self, lines: Sequence[Mapping[str, Any] | EncodedTrace], place: int | None = None) -> None: ...


@dataclass
class SuiteRun:
    results: ResultSpool
    """Every result, on disk as it finished (issue 34: a run's memory does not grow with its suite)."""
    spans: list[dict[str, Any]]
    cassette_entries: int = 0


def run_plan(plan: Sequence[tuple[str, str | None, Sequence[Scenario]]], config: RunConfig, *, primary: str,
             progress: Callable[[ScenarioResult], None] | None = None, idle: Callable[[], None] | None = None,
             traces: TraceSink | None = None) -> SuiteRun:
    """Each system of ``plan`` in turn (``config`` with that system's ``--system``); the results of every system
    but ``primary`` are relabelled ``strategy@system``. ``traces``: as in :func:`run_suite`."""
    run = SuiteRun(ResultSpool(), [])
    for name, spec, part in plan:
        label = _labeller(name, primary)
        tell = None if progress is None else _then(label, progress)
        one = run_suite(part, replace(config, system=spec, shard=None, column_system="" if name == primary else name),
                        progress=tell, idle=idle, traces=traces, label=None if name == primary else label,
                        into=run.results)
        run.spans += one.spans
        run.cassette_entries = max(run.cassette_entries, one.cassette_entries)
    return run


def _labeller(system: str, primary: str) -> Callable[[ScenarioResult], ScenarioResult]:
    def label(r: ScenarioResult) -> ScenarioResult:
        return r if system == primary else relabel(r, column_label(r.strategy, system, primary))

    return label


def _then(label: Callable[[ScenarioResult], ScenarioResult],
          progress: Callable[[ScenarioResult], None]) -> Callable[[ScenarioResult], None]:
    return lambda r: progress(label(r))


def relabel(result: ScenarioResult, label: str) -> ScenarioResult:
    """A result (and its probes) under its summary column's label (``heuristic@sqlite``)."""
    return replace(result, strategy=label, probes=tuple(replace(p, strategy=label) for p in result.probes))


def select_shard(scenarios: Sequence[Scenario], shard: tuple[int, int] | None) -> list[Scenario]:
    """Scenarios of shard I of N (1-based), by position in id order."""
    ordered = sorted(scenarios, key=lambda s: s.id)
    if shard is None:
        return ordered
    i, n = shard
    return [s for k, s in enumerate(ordered) if k % n == i - 1]


class Worker:
    """Replays scenarios in this process: telemetry providers, the (lazily built) model, the system factory.

    The public way to replay one scenario × strategy outside ``run_suite`` (the pytest plugin uses it)."""

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.setup: TelemetrySetup = build_telemetry(config.environ, run_id=config.run_id, suite=config.suite)
        self.setup.telemetry.system = config.column_system
        self.factory = load_factory(config.system)
        self.context = ProbeContext()
        self._models: dict[str, Model] = {}
        self.cassette: Cassette | None = None
        self.proxy: ModelProxy | None = None  # a system whose factory says model_proxy = True: started on first use
        self._lock = threading.Lock()

    @property
    def model(self) -> Model:
        """The cassette-backed model of the ``model`` strategy, built on first use (scripted-only runs need none)."""
        return self.set_model("")

    def set_model(self, which: str) -> Model:
        """The cassette-backed model of strategy ``model`` (``which`` empty) or ``model:WHICH`` (a cassette set)."""
        if which not in self._models:
            if self.config.model is None:
                raise HarnessError("the model strategy needs a model: pass --cassettes DIR (replay) or --model")
            spec = self.config.model.for_set(which)
            name = spec.resolved_model()
            cassette = Cassette.open(spec.cassettes)
            if not which:
                self.cassette = cassette
            # replay answers from the cassette without litellm (importing it costs ~2 s); record and live call it
            adapter = None if spec.mode == "replay" else LiteLLMModel(name, api_base=spec.api_base,
                                                                         timeout_scale=spec.timeout_scale)
            self._models[which] = CassetteModel(cassette, name, spec.mode, adapter, self.context, adapter=adapter)
        return self._models[which]

    def model_for(self, scenario: Scenario, strategy: str) -> Model | None:
        """The model a strategy uses for this scenario: its scripted replies, else the cassette-backed model (of the
        set ``model:SET`` names)."""
        if base_strategy(strategy) not in MODEL_STRATEGIES:
            return None
        if scenario.scripted_model is not None:
            return scripted_model(scenario.scripted_model)
        return self.set_model(strategy.partition(":")[2] if strategy != base_strategy(strategy) else "")

    def run_one(self, scenario: Scenario, strategy: str) -> ScenarioResult:
        """Replay ``scenario`` once with ``strategy`` (``model:SET`` replays as ``model``, labelled ``model:SET``)."""
        base = base_strategy(strategy)
        proxy = self._proxy()
        result = replay(scenario, strategy=base, telemetry=self.setup.telemetry,
                        model=self.model_for(scenario, strategy), context=self.context, system_factory=self.factory)
        if proxy is not None and (misses := proxy.take_misses()):  # like a cassette miss: the run is incomplete
            result = replace(result, passed=False, error=f"{scenario.id} [{base}] {misses[0].describe()}")
        return result if base == strategy else relabel(result, strategy)

    def _proxy(self) -> ModelProxy | None:
        if self.proxy is None:
            self.proxy = proxy_for(self.factory, self.config.model, self.config.system,
                                   lambda: (self.context.scenario, self.context.step), self._proxied)
        return self.proxy

    def _proxied(self, call: ProxyCall) -> None:
        """A call the system made through the model proxy: a span, and counted in its step's probe (``llm.*``) as
        the harness's own model calls are; an unrecorded one is not (it makes the run incomplete)."""
        if call.outcome != "unrecorded":
            with self._lock:  # the proxy answers on its own threads
                log = self.context.proxied
                log.calls, log.replayed = log.calls + 1, log.replayed + (call.outcome == "replayed")
                log.input_tokens, log.output_tokens = log.input_tokens + call.input_tokens, log.output_tokens + call.output_tokens
        proxied_call_span(self.setup.telemetry, call)

    def run(self, scenario: Scenario) -> tuple[list[ScenarioResult], list[dict[str, Any]]]:
        """Every strategy of the run for ``scenario``, and the spans they produced."""
        scenario = unpacked(scenario)  # a run holds each scenario as its pickle until it replays
        results = [self.run_one(scenario, s) for s in strategies_for(scenario, self.config.strategies)]
        return results, self.setup.jsonl.take()

    def shutdown(self) -> None:
        if self.proxy is not None:
            self.proxy.stop()
            os.environ.pop(PROXY_URL_ENV, None)
            self.proxy = None
        self.setup.shutdown()


_WORKER: Worker | None = None
_SELECTED: Sequence[Scenario] = ()
"""The pool's scenarios, handed over once when a worker starts (inherited when it forks): a task is an index."""


def _init(config: RunConfig, selected: Sequence[Scenario] = ()) -> None:
    global _WORKER, _SELECTED
    child_signals(pool=True)  # Ctrl-C and SIGTERM are the run's: a worker printed 'Process ForkProcess-3: Traceback'
    _WORKER, _SELECTED = Worker(config), selected
    # flush OTLP exporters when the pool's process exits: a forked worker leaves through os._exit, which runs
    # multiprocessing's finalizers but not atexit (a spawned one runs both; shutdown runs once either way)
    mp_util.Finalize(None, _WORKER.shutdown, exitpriority=10)
    atexit.register(_WORKER.shutdown)


def _task(scenario: Scenario) -> tuple[list[ScenarioResult], list[dict[str, Any]]]:
    assert _WORKER is not None
    return _WORKER.run(scenario)


def _encoded_task(index: int) -> tuple[list[ScenarioResult], list[EncodedTrace]]:
    """:func:`_task` of the ``index``-th scenario; each trace goes back as its ``traces.jsonl`` line, encoded here."""
    results, spans = _task(_SELECTED[index])
    return results, [EncodedTrace.of(request) for request in spans]


def _indexed_task(index: int) -> tuple[list[ScenarioResult], list[dict[str, Any]]]:
    return _task(_SELECTED[index])


def pool_chunk(count: int, workers: int) -> int:
    """Scenarios a pool task carries: about sixteen tasks per worker, so a large suite makes a few hundred round
    trips instead of one per scenario, and at most 16, so the progress line keeps moving and the last task, which
    one worker replays while the other has finished, is short (each of a run's suites ends with one)."""
    return max(1, min(16, count // (workers * 16)))


def run_suite(scenarios: Sequence[Scenario], config: RunConfig, *,
              progress: Callable[[ScenarioResult], None] | None = None, idle: Callable[[], None] | None = None,
              traces: TraceSink | None = None,
              label: Callable[[ScenarioResult], ScenarioResult] | None = None,
              into: ResultSpool | None = None) -> SuiteRun:
    """Replay every selected scenario with every strategy; results read back in (scenario, strategy) order.
    ``idle`` is called when this process waits for others (the side process, the pool's workers).
    ``traces`` (if given) takes each scenario's spans as it finishes, with its place, else ``SuiteRun.spans`` keeps
    them in order. ``label``: applied to each result as it is kept (``run_plan``'s columns). ``into``: the spool
    the results join (after what it holds), else a new one. Each scenario's results and traces leave this process's
    memory the moment it finishes, whatever order scenarios finish in."""
    for strategy in config.strategies or ():
        if base_strategy(strategy) not in STRATEGY_NAMES:
            raise HarnessError(f"unknown strategy {strategy!r}; expected one of {', '.join(STRATEGY_NAMES)}")
    selected = select_shard(scenarios, config.shard)
    run = SuiteRun(ResultSpool() if into is None else into, [])
    base = run.results.next_place
    held: dict[int, Sequence[Any]] = {}  # without a trace sink, spans that came early wait for their turn
    turn = 0

    def keep(i: int, out: list[ScenarioResult], spans: Sequence[Any]) -> None:
        nonlocal turn
        run.results.add(out if label is None else map(label, out), place=base + i)
        if traces is not None:
            traces(spans, place=base + i)
            return
        held[i] = spans
        while turn in held:
            run.spans.extend(held.pop(turn))
            turn += 1

    def announce(out: list[ScenarioResult]) -> None:
        stop_if_asked()
        for r in out:
            if progress:
                progress(r)

    def collect(outputs: Iterable[tuple[list[ScenarioResult], Sequence[Any]]]) -> None:
        for i, (out, spans) in enumerate(outputs):
            keep(i, out, spans)
            announce(out)

    jobs = 1 if config.model is not None and config.model.mode == "record" else max(1, config.jobs)
    global _SUITES_RUN
    _SUITES_RUN += 1
    if not shipped(config.system):  # a plug-in system: in child processes the harness can kill
        _side.discard()
        for i, (out, spans) in run_isolated(selected, config, jobs):
            keep(i, out, spans)
            announce(out)  # the progress bar moves as each finishes
        run.cassette_entries = len(Cassette.open(config.model.cassettes)) if config.model is not None else 0
        return run
    if jobs == 1:
        side = _side_indices(selected, config) if _SUITES_RUN == 1 else []
        if not side:
            _side.discard()
        worker = Worker(config)
        try:
            if not side:
                collect(map(worker.run, selected))
            else:  # litellm's import runs on the other core while this process replays everything else
                process = _side.take()
                try:
                    process.replay(config, [selected[i] for i in side])
                    for i, scenario in enumerate(selected):
                        if i not in side:
                            out, spans = worker.run(scenario)
                            keep(i, out, spans)  # read back in (scenario, strategy) order: the places say it
                            announce(out)
                    if idle is not None:
                        idle()
                    side_outputs = process.outputs()
                finally:
                    process.close()  # whatever happened here, the side process is stopped and reaped
                for i, (out, spans) in zip(side, side_outputs, strict=True):
                    keep(i, out, spans)
                    announce(out)
        finally:
            worker.shutdown()
        run.cassette_entries = len(worker.cassette) if worker.cassette is not None else 0
        if side and worker.cassette is None and config.model is not None:  # only the side process used the model
            run.cassette_entries = len(Cassette.open(config.model.cassettes))
        return run
    _side.discard()
    workers = min(jobs, os.cpu_count() or 1, len(selected) or 1)
    with ProcessPoolExecutor(max_workers=workers, initializer=_init, initargs=(config, selected)) as pool:
        try:
            task: Callable[[int], tuple[list[ScenarioResult], Sequence[Any]]] = _indexed_task if traces is None else _encoded_task
            outputs_ = pool.map(task, range(len(selected)), chunksize=pool_chunk(len(selected), workers))
            if idle is not None:  # the workers replay: compile the report here meanwhile
                idle()
            collect(outputs_)
        except BrokenProcessPool:
            if USER_INTERRUPT.is_set():  # a worker killed outright (SIGKILL to the group) as the run was stopped
                raise KeyboardInterrupt from None
            raise
    # what a serial run says too (summary.json's meta.cassette_entries was null under --jobs N)
    run.cassette_entries = len(Cassette.open(config.model.cassettes)) if config.model is not None else 0
    return run


_SUITES_RUN = 0
"""Suites run in this process: only the first may split (a long-lived process imports litellm once anyway)."""


def prestart_side() -> None:
    """Fork the side process (``_side``) before a first serial replay, while this process is small (it imports
    litellm only if the loaded suite needs it)."""
    if _SUITES_RUN == 0:
        _side.prestart()


def discard_side() -> None:
    """Stop a prestarted side process that no run took (the run failed before replaying)."""
    _side.discard()


def _side_indices(selected: Sequence[Scenario], config: RunConfig) -> list[int]:
    """Scenarios to replay in a second process at the start of a serial run: those whose model faults go through
    the real litellm adapter, while importing litellm (seconds of pure Python) would otherwise stall this one.
    Only with a spare core, fork, and litellm not yet imported here (``_side.possible``), in replay mode."""
    if not _side.possible() or (config.model is not None and config.model.mode != "replay"):
        return []  # record/live import litellm here anyway
    side = [i for i, s in enumerate(selected) if _needs_transport(s, config)]
    return side if len(side) < len(selected) else []


def _needs_transport(scenario: Scenario, config: RunConfig) -> bool:
    return model_faults(scenario) \
        and any(base_strategy(s) in MODEL_STRATEGIES for s in strategies_for(scenario, config.strategies))
