"""Replay one scenario against a memory system under a fake clock, once per strategy, collecting probe records.

A scenario runs in a fresh temporary directory with the core's real code paths; every memory operation becomes a
span; every recall, forget, dream, extract and check step becomes a probe row (DESIGN §4 ``probes.jsonl``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from harness.coverage import covered_facts, doc_covers, entry_coverage, recall_metrics
from harness.errors import HarnessError
from harness.scenario import (
    AdvanceStep,
    CheckStep,
    DreamStep,
    ForgetStep,
    LockStep,
    RecallStep,
    Scenario,
    SessionStep,
    Step,
)
from harness.system import MemorySystem, OpResult, ReferenceSystem
from harness.telemetry import Telemetry
from memory_core.clock import FixedClock, monotonic_ms
from memory_core.events import EventSink
from memory_core.index import index_stats, truncate_index_for_prompt
from memory_core.model import Model, ModelReply, ModelRequest

MODEL_STRATEGIES = frozenset({"model"})
SystemFactory = Callable[[Path, FixedClock, Model | None, EventSink], MemorySystem]


def reference_factory(workdir: Path, clock: FixedClock, model: Model | None, events: EventSink) -> MemorySystem:
    """The default system under test: the reference core."""
    return ReferenceSystem(workdir, clock, model, events)


@dataclass
class CallLog:
    """Model calls made during the current probe."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    replayed: int = 0
    cost_usd: float | None = None
    prompt_versions: set[str] = field(default_factory=set)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"calls": self.calls, "input": self.input_tokens, "output": self.output_tokens,
                               "replayed": self.replayed}
        if self.cost_usd is not None:
            out["cost_usd"] = round(self.cost_usd, 8)
        return out


@dataclass
class ProbeContext:
    """Where the replay is, for cassette error messages."""

    scenario: str = ""
    step: int = -1
    strategy: str = ""


@dataclass
class CountingModel:
    """Counts calls and tokens per probe, then delegates."""

    inner: Model
    log: CallLog = field(default_factory=CallLog)

    @property
    def name(self) -> str:
        return self.inner.name

    def query(self, request: ModelRequest) -> ModelReply:
        self.log.calls += 1
        self.log.prompt_versions.add(request.prompt_version)
        reply = self.inner.query(request)
        self.log.input_tokens += reply.input_tokens
        self.log.output_tokens += reply.output_tokens
        self.log.replayed += int(reply.replayed)
        if reply.cost_usd is not None:
            self.log.cost_usd = (self.log.cost_usd or 0.0) + reply.cost_usd
        return reply


@dataclass
class ScenarioResult:
    """The outcome of one scenario × strategy."""

    scenario: str
    strategy: str
    passed: bool
    failures: list[str]
    probes: list[dict[str, Any]]
    trace_id: str
    error: str | None = None
    duration_ms: float = 0.0
    description: str = ""
    tags: tuple[str, ...] = ()
    prompt_versions: tuple[str, ...] = ()

    @property
    def status(self) -> str:
        """``passed`` | ``failed`` | ``error``."""
        return "error" if self.error else ("passed" if self.passed else "failed")


class _Run:
    """The mutable state of one replay."""

    def __init__(self, scenario: Scenario, strategy: str, system: MemorySystem, clock: FixedClock,
                 telemetry: Telemetry, counter: CountingModel | None, context: ProbeContext) -> None:
        self.s, self.strategy, self.system, self.clock, self.t = scenario, strategy, system, clock, telemetry
        self.counter, self.context = counter, context
        self.seeded: dict[str, frozenset[str]] = {}
        self.surfaced: list[str] = []
        self.probes: list[dict[str, Any]] = []
        self.failures: list[str] = []
        self.sessions: list[str] = []

    def where(self, i: int, kind: str) -> str:
        line = self.s.step_lines[i] if i < len(self.s.step_lines) else 0
        return f"step {i} ({kind}, line {line})"

    def fail(self, i: int, kind: str, message: str) -> str:
        text = f"{self.where(i, kind)}: {message}"
        self.failures.append(text)
        return text

    def covered(self) -> frozenset[str]:
        return covered_facts(self.system.documents(), self.s.facts, self.seeded)

    def probe(self, i: int, kind: str, *, query: str = "", selected: tuple[str, ...] = (), expected: tuple[str, ...] = (),
              covered: tuple[str, ...] = (), metrics: Mapping[str, Any] | None = None, passed: bool = True,
              duration_ms: float = 0.0, strategy: str | None = None, **extra: Any) -> None:
        log = self.counter.log if self.counter else CallLog()
        self.probes.append({
            "scenario": self.s.id, "step": i, "kind": kind, "strategy": self.strategy, "query": query,
            "selected": list(selected), "expected": list(expected), "covered": list(covered),
            "metrics": dict(metrics or {}), "passed": passed, "duration_ms": round(duration_ms, 3),
            "tokens": log.as_dict(), "strategy_used": strategy or self.strategy, **extra,
        })

    def step_strategy(self, i: int, step: Step) -> str:
        own = getattr(step, "strategy", None)
        return own or self.s.strategy_overrides.get(i, self.strategy)

    def record_store(self) -> None:
        counts = dict.fromkeys(("user", "feedback", "project", "reference"), 0)
        for doc in self.system.documents():
            counts[doc.type] = counts.get(doc.type, 0) + 1
        self.t.record_store(counts, len(self.system.index_text().encode("utf-8")))

    def run_step(self, i: int, step: Step) -> None:
        self.context.step = i
        if self.counter:
            self.counter.log = CallLog()
        now = self.clock.now()
        self._run_step(i, step, now)
        if isinstance(step, (SessionStep, DreamStep, ForgetStep)):  # the steps that change the store
            self.record_store()

    def _run_step(self, i: int, step: Step, now: datetime) -> None:
        if isinstance(step, AdvanceStep):
            self.clock.advance(step.delta)
        elif isinstance(step, LockStep):
            self.system.plant_lock(step.pid, mtime=now - step.age)
        elif isinstance(step, SessionStep):
            self._session(i, step, now)
        elif isinstance(step, DreamStep):
            self._dream(i, step, now)
        elif isinstance(step, RecallStep):
            self._recall(i, step, now)
        elif isinstance(step, ForgetStep):
            self._forget(i, step, now)
        else:
            self._check(i, step)

    def _session(self, i: int, step: SessionStep, now: datetime) -> None:
        if step.session not in self.sessions:
            self.sessions.append(step.session)
        self.system.add_turns(step.session, step.turns, now=now)
        if not step.extract:
            return
        t0 = monotonic_ms()
        with self.t.operation("extract", step=i, now=now, session_id=step.session):
            res = self.system.extract(step.session, now=now, strategy=self.step_strategy(i, step),
                                      queued_behind=step.queued_behind)
        ok = self._expect(i, "extract", res, step.expect_status, step.expect_reason)
        self.probe(i, "extract", query=step.session, selected=res.selected, passed=ok, duration_ms=monotonic_ms() - t0,
                   strategy=res.strategy, status=res.status, reason=res.reason, fallback_reason=res.fallback_reason,
                   error_message=res.error)

    def _expect(self, i: int, kind: str, res: OpResult, status: str | None, reason: str | None) -> bool:
        ok = True
        if status is not None and res.status != status:
            self.fail(i, kind, f"expected status {status}, got {res.status}" + (f" ({res.error})" if res.error else ""))
            ok = False
        if reason is not None and res.reason != reason:
            self.fail(i, kind, f"expected reason {reason}, got {res.reason or 'none'} (status {res.status})")
            ok = False
        return ok

    def _expect_strategy(self, i: int, kind: str, res: OpResult, strategy: str | None, fallback: str | None) -> bool:
        ok = True
        if strategy is not None and res.strategy != strategy:
            self.fail(i, kind, f"expected strategy {strategy}, got {res.strategy}")
            ok = False
        if fallback is not None and res.fallback_reason != fallback:
            self.fail(i, kind, f"expected fallback reason {fallback}, got {res.fallback_reason or 'none'}")
            ok = False
        return ok

    def _dream(self, i: int, step: DreamStep, now: datetime) -> None:
        session = self.sessions[-1] if self.sessions else "dream"
        before = self.covered()
        t0 = monotonic_ms()
        with self.t.operation("dream", step=i, now=now, session_id=session):
            res = self.system.dream(session, now=now, strategy=self.step_strategy(i, step), force=step.force)
        elapsed = monotonic_ms() - t0
        ok = self._expect(i, "dream", res, step.expect_status, step.expect_reason)
        metrics: dict[str, Any] = {"deduped": res.deduped}
        if res.status in ("updated", "noop"):
            after = self.covered()
            counts = entry_coverage(self.system.documents(), self.s.facts, self.seeded)
            metrics["residual_duplicates"] = sum(max(0, c - 1) for c in counts.values())
            metrics["retention"] = len(after & before) / len(before) if before else 1.0
        self.probe(i, "dream", selected=res.touched, passed=ok, duration_ms=elapsed, metrics=metrics,
                   strategy=res.strategy, status=res.status, reason=res.reason, fallback_reason=res.fallback_reason,
                   error_message=res.error)

    def _recall(self, i: int, step: RecallStep, now: datetime) -> None:
        strategy = self.step_strategy(i, step)
        excluded = list(self.surfaced) if step.exclude_surfaced else []
        t0 = monotonic_ms()
        with self.t.operation("recall", step=i, now=now):
            res = self.system.recall(step.query, now=now, limit=step.k, excluded=excluded, strategy=strategy)
        elapsed = monotonic_ms() - t0
        docs = {d.relative_path: d for d in self.system.documents()}
        covers = [doc_covers(docs[p], self.s.facts, self.seeded) if p in docs else frozenset() for p in res.selected]
        expected = frozenset(step.expect)
        relevant = sum(1 for d in docs.values() if doc_covers(d, self.s.facts, self.seeded) & expected)
        metrics = recall_metrics(covers, expected, k=step.k, relevant_in_store=relevant)
        found = sorted(set().union(*covers) & expected) if covers else []
        ok = True
        for key, minimum in step.require.items():
            value = metrics.get(key)
            if value is None or value < minimum:
                self.fail(i, "recall", f"{key} {value} < required {minimum} for query {step.query!r}")
                ok = False
        for text in step.prompt_contains:
            if text not in res.prompt:
                self.fail(i, "recall", f"prompt block does not contain {text!r}")
                ok = False
        # contract checks that hold for every memory system, stated or not (spec §7.1-§7.3)
        if len(res.selected) > step.k:
            self.fail(i, "recall", f"selected {len(res.selected)} memories, more than k={step.k}")
            ok = False
        if len(set(res.selected)) != len(res.selected):
            self.fail(i, "recall", f"selected the same memory twice: {list(res.selected)}")
            ok = False
        leaked = sorted(set(res.selected) & set(excluded))
        if leaked:
            self.fail(i, "recall", f"selected already-surfaced memories it was told to exclude: {leaked}")
            ok = False
        forbidden = sorted(set().union(*covers) & set(step.forbid)) if covers else []
        if forbidden:
            self.fail(i, "recall", f"recalled forbidden facts: {', '.join(forbidden)}")
            ok = False
        if step.expect_covered is not None and sorted(set(found)) != sorted(step.expect_covered):
            self.fail(i, "recall", f"selection covers {sorted(found)}, expected exactly {sorted(step.expect_covered)}")
            ok = False
        if step.expect_selected is not None and tuple(res.selected) != step.expect_selected:
            self.fail(i, "recall", f"selected {list(res.selected)}, expected exactly {list(step.expect_selected)}")
            ok = False
        ok &= self._expect_strategy(i, "recall", res, step.expect_strategy, step.expect_fallback)
        self.surfaced += [p for p in res.selected if p not in self.surfaced]
        self.probe(i, "recall", query=step.query, selected=res.selected, expected=step.expect, covered=tuple(found),
                   metrics=metrics, passed=ok, duration_ms=elapsed, strategy=res.strategy,
                   fallback_reason=res.fallback_reason, k=step.k, scores=list(res.scores))

    def _forget(self, i: int, step: ForgetStep, now: datetime) -> None:
        strategy = self.step_strategy(i, step)
        before = self.covered()
        t0 = monotonic_ms()
        with self.t.operation("forget", step=i, now=now):
            res = self.system.forget(step.query, now=now, strategy=strategy)
        elapsed = monotonic_ms() - t0
        after = self.covered()
        ok = True
        still = sorted(set(step.expect_removed) & after)
        if still:
            self.fail(i, "forget", f"facts still covered after forgetting: {', '.join(still)}")
            ok = False
        lost = sorted((before - after) - set(step.expect_removed))
        if lost:
            self.fail(i, "forget", f"forget also removed facts it should have kept: {', '.join(lost)}")
            ok = False
        ok &= self._expect_strategy(i, "forget", res, step.expect_strategy, step.expect_fallback)
        removed = sorted(before - after)
        expected = set(step.expect_removed)
        metrics = {"removed_facts": len(removed), "expected_removed": len(expected),
                   "precision": len(set(removed) & expected) / len(removed) if removed else (1.0 if not expected else 0.0),
                   "recall": len(set(removed) & expected) / len(expected) if expected else 1.0}
        self.probe(i, "forget", query=step.query, selected=res.selected, expected=step.expect_removed,
                   covered=tuple(removed), metrics=metrics, passed=ok, duration_ms=elapsed, strategy=res.strategy,
                   fallback_reason=res.fallback_reason)

    def _check(self, i: int, step: CheckStep) -> None:
        covered = self.covered()
        n_before = len(self.failures)
        for fid in step.facts_present:
            if fid not in covered:
                self.fail(i, "check", f"fact {fid} is not covered by any memory")
        for fid in step.facts_absent:
            if fid in covered:
                self.fail(i, "check", f"fact {fid} is still covered")
        index = self.system.index_text()
        stats = index_stats(index)
        if step.index_within_limits is not None and stats["within"] is not step.index_within_limits:
            self.fail(i, "check", f"index within limits is {stats['within']}, expected {step.index_within_limits} "
                                  f"({stats['lines']} lines, {stats['max_line_chars']} chars longest)")
        if step.max_entries_per_fact is not None:
            counts = entry_coverage(self.system.documents(), self.s.facts, self.seeded)
            over = {f: c for f, c in counts.items() if c > step.max_entries_per_fact}
            if over:
                self.fail(i, "check", f"facts in more than {step.max_entries_per_fact} entries: {over}")
        present = {d.relative_path for d in self.system.documents()}
        for path in step.files_present:
            if path not in present:
                self.fail(i, "check", f"file {path} is missing")
        for path in step.files_absent:
            if path in present:
                self.fail(i, "check", f"file {path} still exists")
        for text in step.index_contains:
            if text not in index:
                self.fail(i, "check", f"MEMORY.md does not contain {text!r}")
        if step.index_lines is not None and stats["lines"] != step.index_lines:
            self.fail(i, "check", f"MEMORY.md has {stats['lines']} lines, expected {step.index_lines}")
        loaded = truncate_index_for_prompt(index) if step.loaded_index_contains else ""
        for text in step.loaded_index_contains:
            if text not in loaded:
                self.fail(i, "check", f"the index as loaded into the prompt does not contain {text!r}")
        if step.no_stray_files:
            stray = self.system.stray_files()
            if stray:
                self.fail(i, "check", f"files written outside the memory root: {stray}")
        self.probe(i, "check", covered=tuple(sorted(covered)), passed=len(self.failures) == n_before,
                   metrics={f"index.{k}": v for k, v in stats.items()})

    def finish(self) -> None:
        stats = index_stats(self.system.index_text())
        counts = entry_coverage(self.system.documents(), self.s.facts, self.seeded)
        metrics: dict[str, Any] = {f"index.{k}": v for k, v in stats.items()}
        metrics["residual_duplicates"] = sum(max(0, c - 1) for c in counts.values())
        self.probe(len(self.s.steps), "check", query="end of scenario", covered=tuple(sorted(self.covered())),
                   metrics=metrics, final=True)


def _kind(scenario: Scenario, step: int) -> str:
    """``session`` / ``dream`` / … for step ``step``, or ``seeding`` before the first step."""
    if 0 <= step < len(scenario.steps):
        return type(scenario.steps[step]).__name__.removesuffix("Step").lower()
    return "seeding"


def replay(
    scenario: Scenario,
    *,
    strategy: str,
    telemetry: Telemetry,
    model: Model | None = None,
    context: ProbeContext | None = None,
    system_factory: SystemFactory = reference_factory,
) -> ScenarioResult:
    """Run ``scenario`` once with ``strategy``; expectations fail the result, exceptions make it an error."""
    context = context or ProbeContext()
    context.scenario, context.strategy, context.step = scenario.id, strategy, -1
    clock = FixedClock(scenario.clock)
    counter = CountingModel(telemetry.traced(model)) if model is not None else None
    t0 = monotonic_ms()
    with tempfile.TemporaryDirectory(prefix="memharness-") as tmp, telemetry.scenario(
        case=scenario.id, strategy=strategy, digest=scenario.digest, start=scenario.clock
    ) as root:
        trace_id = f"{root.get_span_context().trace_id:032x}"
        system = system_factory(Path(tmp), clock, counter, telemetry)
        run = _Run(scenario, strategy, system, clock, telemetry, counter, context)
        error = None
        try:
            for memory in scenario.memories:
                system.seed(memory, mtime=clock.now() - memory.age)
                if memory.facts:
                    run.seeded[memory.path] = frozenset(memory.facts)
            system.finish_seeding(now=clock.now())
            for i, step in enumerate(scenario.steps):
                run.run_step(i, step)
            run.finish()
        except HarnessError as exc:
            error = f"{scenario.id} [{strategy}] {run.where(context.step, _kind(scenario, context.step))}: {exc}"
        except Exception as exc:
            error = (f"{scenario.id} [{strategy}] {run.where(context.step, _kind(scenario, context.step))}: "
                     f"{type(exc).__name__}: {exc}")
        passed = not run.failures and error is None
        root.set_attribute("test.case.result.status", "pass" if passed else "fail")
    return ScenarioResult(
        scenario.id, strategy, passed, run.failures, run.probes, trace_id, error, monotonic_ms() - t0,
        scenario.description, scenario.tags, tuple(sorted(counter.log.prompt_versions)) if counter else (),
    )
