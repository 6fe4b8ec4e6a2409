"""Replay one scenario against a memory system under a fake clock, producing one ``Probe`` per graded step.

A scenario runs in a fresh temporary directory; every memory operation becomes a span; every recall, forget,
dream, extract and check step becomes a ``Probe`` (DESIGN §4 ``probes.jsonl``). Steps that need a capability the
system does not declare are skipped, and the probe says why; after any skipped step but a check, every later step
is skipped too: it assumes what that step did (files written, memories surfaced, a scripted reply consumed).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from harness.errors import HarnessError, ScenarioInputError, SystemFailure, one_line
from harness.replay._checks import hold_extractions, run_check, run_trailing
from harness.replay._coverage import covered_facts, doc_covers, entry_coverage, recall_metrics
from harness.replay._expect import FaultingModel, RecordingSink, check_outcome
from harness.replay._index import index_metrics, index_stats
from harness.replay._inputs import seed_line
from harness.replay._models import CallLog, CountingModel, ProbeContext
from harness.replay._needs import PROBE_KIND, scenario_needs, step_kind
from harness.replay._observed import SPENT, Observed, close_system, op_timeout, open_system
from harness.replay._quality import recall_verdict
from harness.replay._records import MetricValue, Probe, ProbeKind, ScenarioResult, shared_fields
from harness.scenario import (
    AdvanceStep,
    CheckStep,
    DreamStep,
    FaultStep,
    ForgetStep,
    LockStep,
    Outcome,
    RecallStep,
    Scenario,
    SessionStep,
    StateStep,
    Step,
)
from harness.system import (
    Capability,
    MemorySystem,
    SystemFactory,
    declared_recall_limit,
    strategy_problem,
    target_problem,
    variant_factory,
)
from harness.systems.files import reference_factory
from harness.telemetry import Operation, Telemetry
from memory_core.clock import FixedClock, monotonic_ms
from memory_core.model import Model

_SETS_UP = (FaultStep, LockStep, StateStep, DreamStep, SessionStep, ForgetStep, RecallStep)  # skipped: so is the rest


@dataclass
class _Run:
    """The mutable state of one replay."""

    s: Scenario
    strategy: str
    system: MemorySystem
    clock: FixedClock
    t: Telemetry
    counter: CountingModel | None
    context: ProbeContext
    capabilities: frozenset[Capability]
    sink: RecordingSink
    faulting: FaultingModel | None = None
    seeded: dict[str, frozenset[str]] = field(default_factory=dict)
    surfaced: list[str] = field(default_factory=list)
    probes: list[Probe] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)
    needs: list[list[tuple[Capability, str]]] = field(default_factory=list)
    unset: str = ""
    """Why an earlier step that changes the world (anything but a check) was skipped: every later step is too."""

    @property
    def indexed(self) -> bool:
        return Capability.FILE_INDEX in self.capabilities

    @property
    def recall_limit(self) -> int:
        return declared_recall_limit(self.system)

    def where(self, i: int, kind: str) -> str:
        if not 0 <= i < len(self.s.step_lines):
            return f"{kind} (before step 0: the memories)"  # never "step -1 (…, line 0)"
        return f"step {i} ({kind}, line {self.s.step_lines[i]})"

    def fail(self, i: int, kind: str, message: str) -> None:
        self.failures.append(f"{self.where(i, kind)}: {message}")

    def check(self, ok: bool, i: int, kind: str, message: str) -> bool:  # noqa: FBT001
        """Record a failure unless ``ok``; returns ``ok``."""
        if not ok:
            self.fail(i, kind, message)
        return ok

    def covered(self) -> frozenset[str]:
        return covered_facts(self.system.documents(), self.s.facts, self.seeded)

    def probe(self, i: int, kind: ProbeKind, **fields: Any) -> None:
        log = self.counter.log if self.counter else CallLog()
        fields.setdefault("strategy_used", self.strategy)
        self.probes.append(Probe(scenario=self.s.id, step=i, kind=kind, strategy=self.strategy,
                                 tokens=log.usage(self.context.proxied),
                                 **shared_fields(fields)))

    def step_strategy(self, i: int, step: Step) -> str:
        own = getattr(step, "strategy", None)
        return own or self.s.strategy_overrides.get(i, self.strategy)

    def record_store(self) -> None:
        if not self.t.metrics_on:  # nothing reads the gauges: do not count
            return
        counts = dict.fromkeys(("user", "feedback", "project", "reference"), 0)
        for doc in self.system.documents():
            counts[doc.type] = counts.get(doc.type, 0) + 1
        size = len(self.index_text().encode("utf-8")) if self.indexed else 0
        self.t.record_store(counts, size)

    def index_text(self) -> str:
        return self.system.index_text() if self.indexed else ""  # type: ignore[attr-defined]

    def run_step(self, i: int, step: Step) -> None:
        self.context.step, self.context.proxied = i, CallLog()
        self.sink.events = []
        if self.counter:
            self.counter.log = CallLog()
        if isinstance(self.system, Observed):
            self.system.refresh()  # a step may change what the system reports without a call (a clock advance)
        missing = [(c, part) for c, part in self.needs[i] if c not in self.capabilities]  # a queue: all its needs
        if (missing and not isinstance(step, CheckStep)) or (self.unset and not isinstance(step, AdvanceStep)):
            reason = self.unset or "; ".join(f"{part} needs capability {c.value}" for c, part in missing)
            if isinstance(step, _SETS_UP) and not self.unset:  # what follows assumes it: skipped from here on
                self.unset = f"after step {i} was skipped ({reason})"
            self.probe(i, PROBE_KIND[type(step)], skipped=reason, query=getattr(step, "query", ""))
            return
        now = self.clock.now()
        if isinstance(step, AdvanceStep):
            self.clock.advance(step.delta)
        elif isinstance(step, LockStep):
            self.system.plant_lock(step.pid, mtime=now - step.age)  # type: ignore[attr-defined]
        elif isinstance(step, StateStep):
            self.system.plant_state(step.file, step.text, mtime=now)  # type: ignore[attr-defined]
        elif isinstance(step, FaultStep):
            self._fault(i, step)
        elif isinstance(step, SessionStep):
            self._session(i, step, now)
        elif isinstance(step, DreamStep):
            self._dream(i, step, now)
        elif isinstance(step, RecallStep):
            self._recall(i, step, now)
        elif isinstance(step, ForgetStep):
            self._forget(i, step, now)
        elif isinstance(step, CheckStep):
            run_check(self, i, step, [f"{part} needs capability {c.value}" for c, part in missing])
        else:
            raise HarnessError(f"unknown step type {type(step).__name__}")

    def _fault(self, i: int, step: FaultStep) -> None:
        if step.model is not None:
            if self.faulting is None:
                self.fail(i, "fault", f"a model fault needs a model: strategy {self.strategy} calls none")
            else:
                self.faulting.inject(step)
        else:
            self.system.inject_fault(step.io, step.match, step.times)  # type: ignore[attr-defined]

    def judge(self, op: Operation, since: int, fallback: str | None, error: str | None) -> None:
        """Put the step's verdict on its span, then end it: one evaluation event per failed expectation (or one
        that passed), ERROR for a failed expectation, a failed operation or a fallback, else OK."""
        failed = self.failures[since:]
        for message in failed:
            op.evaluate("memharness.expectation", label="fail", score=0.0, explanation=message)
        if not failed:
            op.evaluate("memharness.expectation", label="pass", score=1.0)
        if error:
            op.fail(f"operation failed: {error}")
        if fallback:
            op.fail(f"model fell back to the heuristic: {fallback}")
        op.close()

    def outcome_ok(self, i: int, kind: str, want: Outcome, result: Any, *, touched: tuple[str, ...] = (),
                   count: int | None = None) -> bool:
        error = getattr(result, "error", None) if kind in ("recall", "forget") else None  # failed without raising
        ok = self.check(error is None, i, kind, f"{kind} failed: {error}")
        if not want.stated():
            return ok
        events = self.sink.events if Capability.EVENTS in self.capabilities else None
        return ok & check_outcome(lambda good, msg: self.check(good, i, kind, msg), want, strategy=result.strategy,
                             fallback=result.fallback_reason, touched=touched, count=count, events=events, kind=kind,
                             shown=self.counter.log.shown if self.counter else (), result=result,
                             params=self.counter.log.params if self.counter else ())

    def _expect_outcome(self, i: int, kind: str, status: str, reason: str | None, error: str | None,
                        want_status: str | None, want_reason: str | None) -> bool:
        ok = want_status is None or self.check(
            status == want_status, i, kind, f"expected status {want_status}, got {status}" + (f" ({error})" if error else ""))
        return (want_reason is None or self.check(
            reason == want_reason, i, kind, f"expected reason {want_reason}, got {reason or 'none'} (status {status})")) and ok

    def _expect_strategy(self, i: int, kind: str, strategy: str, fallback: str | None,
                         want_strategy: str | None, want_fallback: str | None) -> bool:
        ok = want_strategy is None or self.check(strategy == want_strategy, i, kind,
                                                 f"expected strategy {want_strategy}, got {strategy}")
        return (want_fallback is None or self.check(  # `none`: the model path must not have fallen back (as outcomes)
            (fallback or "none") == want_fallback, i, kind,
            f"expected fallback reason {want_fallback}, got {fallback or 'none'}")) and ok

    def _session(self, i: int, step: SessionStep, now: datetime) -> None:
        if step.session not in self.sessions:
            self.sessions.append(step.session)
        self.system.add_turns(step.session, step.turns, now=now)  # Observed hands it a copy
        if not step.extract:
            return
        strategy = self.step_strategy(i, step)
        before = len(self.failures)
        if step.opens_queue:
            hold_extractions(self.system, now)
        with self.t.operation("extract", step=i, now=now, session_id=step.session) as op:
            res = self.system.extract(step.session, now=now, strategy=strategy,
                                      queued_behind=bool(step.queued_behind))
        elapsed = op.duration_ms
        ok = self._expect_outcome(i, "extract", res.status, res.reason, res.error, step.expect_status, step.expect_reason)
        ok &= self.outcome_ok(i, "extract", step.outcome, res, touched=res.touched, count=len(res.written))
        self.judge(op, before, res.fallback_reason, res.error if res.status == "failed" else None)
        if step.closes_queue:
            ok &= run_trailing(self, i, step, now)
        self.probe(i, "extract", query=step.session, selected=res.written, passed=ok, duration_ms=elapsed,
                   strategy_used=res.strategy, status=res.status, reason=res.reason,
                   fallback_reason=res.fallback_reason, error_message=res.error)

    def _dream(self, i: int, step: DreamStep, now: datetime) -> None:
        session = self.sessions[-1] if self.sessions else "dream"
        before = self.covered()
        n_failures = len(self.failures)
        strategy = self.step_strategy(i, step)
        with self.t.operation("dream", step=i, now=now, session_id=session) as op:
            res = self.system.dream(session, now=now, strategy=strategy, force=step.force)
        elapsed = op.duration_ms
        ok = self._expect_outcome(i, "dream", res.status, res.reason, res.error, step.expect_status, step.expect_reason)
        ok &= self.outcome_ok(i, "dream", step.outcome, res, touched=res.touched, count=res.deduped)
        self.judge(op, n_failures, res.fallback_reason, res.error if res.status == "failed" else None)
        metrics: dict[str, MetricValue] = {"deduped": res.deduped}
        if res.status in ("updated", "noop"):
            after = self.covered()
            counts = entry_coverage(self.system.documents(), self.s.facts, self.seeded)
            metrics["residual_duplicates"] = sum(max(0, c - 1) for c in counts.values())
            metrics["retention"] = len(after & before) / len(before) if before else 1.0
        self.probe(i, "dream", selected=res.touched, passed=ok, duration_ms=elapsed, metrics=metrics,
                   strategy_used=res.strategy, status=res.status, reason=res.reason,
                   fallback_reason=res.fallback_reason, error_message=res.error)

    def _recall(self, i: int, step: RecallStep, now: datetime) -> None:
        excluded = list(self.surfaced) if step.exclude_surfaced else []  # the system gets a copy: emptying it hides no leak
        strategy = self.step_strategy(i, step)
        n_failures = len(self.failures)
        k = step.k or self.recall_limit  # the bound the harness checks: stated, else the system's declared limit
        with self.t.operation("recall", step=i, now=now) as op:
            extra = {"options": dict(step.options)} if step.options else {}
            res = self.system.recall(step.query, now=now, limit=step.k, excluded=list(excluded), strategy=strategy, **extra)
        elapsed = op.duration_ms
        docs = {d.id: d for d in self.system.documents()}
        covers = [doc_covers(docs[p], self.s.facts, self.seeded) if p in docs else frozenset() for p in res.selected]
        expected = frozenset(step.expect)
        relevant = sum(1 for d in docs.values() if doc_covers(d, self.s.facts, self.seeded) & expected)
        metrics = recall_metrics(covers, expected, k=k, relevant_in_store=relevant)
        found = sorted(set().union(*covers) & expected) if covers else []
        ok, misses = recall_verdict(lambda good, msg: self.check(good, i, "recall", msg), step, strategy, k, res,
                                    covers, found, metrics, excluded, self.counter)
        ok &= self._expect_strategy(i, "recall", res.strategy, res.fallback_reason, step.expect_strategy,
                                    step.expect_fallback)
        ok &= self.outcome_ok(i, "recall", step.outcome, res)
        op.facts(step.expect, found)
        op.retrieved(res.selected, res.scores)
        for name in ("precision", "recall", "abstention"):
            if metrics.get(name) is not None:
                op.evaluate(f"memharness.recall.{name}", score=metrics[name])
        self.judge(op, n_failures, res.fallback_reason, None)
        self.surfaced += [p for p in res.selected if p not in self.surfaced]
        self.probe(i, "recall", query=step.query, selected=res.selected, expected=step.expect, covered=tuple(found),
                   metrics=metrics, passed=ok, duration_ms=elapsed, strategy_used=res.strategy, quality_misses=misses,
                   fallback_reason=res.fallback_reason, k=k, scores=tuple(res.scores), error_message=res.error)

    def _forget(self, i: int, step: ForgetStep, now: datetime) -> None:
        before, n_failures = self.covered(), len(self.failures)
        strategy = self.step_strategy(i, step)
        with self.t.operation("forget", step=i, now=now) as op:
            extra = {"options": dict(step.options)} if step.options else {}
            res = self.system.forget(step.query, now=now, strategy=strategy, **extra)
        elapsed = op.duration_ms
        after = self.covered()
        still, never = sorted(set(step.expect_removed) & after), sorted(set(step.expect_removed) - before - after)
        ok = self.check(not still, i, "forget", f"facts still covered after forgetting: {', '.join(still)}")
        ok &= self.check(not never, i, "forget", f"fact(s) {', '.join(never)} never stored (no memory covered them "
                                                 "before the forget), so their removal proves nothing")  # round 18
        lost = sorted((before - after) - set(step.expect_removed))
        ok &= self.check(not lost, i, "forget", f"forget also removed facts it should have kept: {', '.join(lost)}")
        ok &= self._expect_strategy(i, "forget", res.strategy, res.fallback_reason, step.expect_strategy,
                                    step.expect_fallback)
        ok &= self.outcome_ok(i, "forget", step.outcome, res, touched=res.touched, count=len(res.removed))
        ok &= step.expect_removed_ids is None or self.check(tuple(res.removed) == step.expect_removed_ids, i, "forget",
                                                            f"removed {list(res.removed)}, expected exactly "
                                                            f"{list(step.expect_removed_ids)}")
        op.facts(step.expect_removed, tuple(sorted(before - after)))
        self.judge(op, n_failures, res.fallback_reason, None)
        removed = sorted(before - after)
        expected = set(step.expect_removed)
        metrics: dict[str, MetricValue] = {
            "removed_facts": len(removed), "expected_removed": len(expected),
            "precision": len(set(removed) & expected) / len(removed) if removed else (1.0 if not expected else 0.0),
            "recall": len(set(removed) & expected) / len(expected) if expected else 1.0}
        self.probe(i, "forget", query=step.query, selected=res.removed, expected=step.expect_removed,
                   covered=tuple(removed), metrics=metrics, passed=ok, duration_ms=elapsed,
                   strategy_used=res.strategy, fallback_reason=res.fallback_reason, error_message=res.error)

    def finish(self) -> None:
        if self.counter:  # the end-of-scenario check makes no model call: do not repeat the last step's
            self.counter.log = CallLog()
        self.context.proxied = CallLog()
        counts = entry_coverage(self.system.documents(), self.s.facts, self.seeded)
        metrics: dict[str, MetricValue] = {}
        if self.indexed:
            metrics = index_metrics(index_stats(self.index_text()))
        metrics["residual_duplicates"] = sum(max(0, c - 1) for c in counts.values())
        self.record_store()  # gauges hold a last value: set once, for the store as the scenario leaves it
        self.probe(len(self.s.steps), "check", query="end of scenario", covered=tuple(sorted(self.covered())),
                   metrics=metrics, final=True)


def replay(scenario: Scenario, *, strategy: str, telemetry: Telemetry, model: Model | None = None,
           context: ProbeContext | None = None, system_factory: SystemFactory = reference_factory) -> ScenarioResult:
    """Run ``scenario`` once with ``strategy``; expectations fail the result, exceptions make it an error."""
    context = context or ProbeContext()
    context.scenario, context.strategy, context.step = scenario.id, strategy, -1
    clock = FixedClock(scenario.clock)
    faulting = FaultingModel(model) if model is not None else None
    counter = CountingModel(telemetry.traced(faulting)) if faulting is not None else None
    sink = RecordingSink(telemetry)
    t0, SPENT[0] = monotonic_ms(), 0.0
    skipped: str | None = None
    # the root span covers the whole replay, the temporary directory's creation and removal included
    with telemetry.scenario(case=scenario.id, strategy=strategy, digest=scenario.digest, start=scenario.clock) as root, \
            tempfile.TemporaryDirectory(prefix="memharness-") as tmp:
        trace_id = f"{root.get_span_context().trace_id:032x}"
        system, caps, broken = open_system(lambda: variant_factory(scenario, system_factory)(Path(tmp), clock, counter,
                                                                                             sink), op_timeout(model))
        observed = cast(MemorySystem, Observed(system, op_timeout(model)))  # records listed once per store state
        run = _Run(scenario, strategy, observed, clock, telemetry, counter, context, caps, sink, faulting)
        error = None
        try:
            skipped = None if broken else (target_problem(scenario, observed) or strategy_problem(observed, strategy))
            if skipped is None and any(m.raw is not None for m in scenario.memories) \
                    and Capability.RAW_FILES not in caps:
                skipped = f"seeds raw file text: needs capability {Capability.RAW_FILES.value}"
            if skipped is None:
                _seed_and_run(scenario, observed, clock, run)
                ran = [q for q in run.probes if not q.final]  # nothing ran: skipped, not passed by absence
                if ran and all(q.skipped for q in ran) and not run.failures:
                    skipped = f"every step was skipped: {ran[0].skipped}"
        except SystemFailure as exc:  # the system's failure, not the harness's: a failed run naming the step
            run.fail(context.step, step_kind(scenario, context.step), str(exc))
        except HarnessError as exc:
            error = f"{scenario.id} [{strategy}] {run.where(context.step, step_kind(scenario, context.step))}: {exc}"
        except Exception as exc:
            error = (f"{scenario.id} [{strategy}] {run.where(context.step, step_kind(scenario, context.step))}: "
                     f"{type(exc).__name__}: {exc}")
        finally:
            run.failures.extend(f"after the last step: {m}" for m in close_system(cast(Observed, observed)))
        passed = not run.failures and error is None
        telemetry.set_verdict(root, "skipped" if skipped else "pass" if passed else "fail",
                              [error] if error else run.failures)
    return ScenarioResult(
        scenario=scenario.id, strategy=strategy, passed=passed, failures=tuple(run.failures),
        probes=tuple(run.probes), trace_id=trace_id, error=error, duration_ms=monotonic_ms() - t0,
        description=scenario.description, tags=scenario.tags,
        prompt_versions=tuple(sorted(counter.prompt_versions)) if counter else (), path=one_line(str(scenario.path)),
        skipped=skipped, system_ms=SPENT[0] * 1000,
    )


def _seed_and_run(scenario: Scenario, system: MemorySystem, clock: FixedClock, run: _Run) -> None:
    for memory in scenario.memories:
        try:
            system.seed(memory, mtime=clock.now() - memory.age)  # Observed hands it a copy
        except ScenarioInputError as exc:  # a seed field the system refuses: located by its entry and its key's line
            raise ScenarioInputError(f"memories[{memory.source[0]}] (line {seed_line(scenario, memory, exc)}): {exc}") from None
        if memory.facts:
            run.seeded[memory.path] = frozenset(memory.facts)
    system.finish_seeding(now=clock.now())
    run.needs = scenario_needs(scenario.steps)
    for i, step in enumerate(scenario.steps):
        run.run_step(i, step)
    run.finish()
