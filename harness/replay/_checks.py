"""The ``check`` step: assertions on the store at one point of a scenario."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from harness.errors import HarnessError
from harness.replay._coverage import entry_coverage
from harness.replay._expect import check_store, check_trailing
from harness.replay._index import index_metrics, index_stats
from harness.replay._records import MetricValue
from harness.scenario import CheckStep, SessionStep
from harness.system import Capability

if TYPE_CHECKING:
    from harness.replay._replay import _Run


def run_check(self: _Run, i: int, step: CheckStep, skipped_parts: list[str]) -> None:
    """A ``check`` step: fact coverage, dedupe, index, files, store-wide and system checks."""
    covered = self.covered()
    n_before = len(self.failures)
    for fid in step.facts_present:
        self.check(fid in covered, i, "check", f"fact {fid} is not covered by any memory")
    for fid in step.facts_absent:
        self.check(fid not in covered, i, "check", f"fact {fid} is still covered")
    if step.max_entries_per_fact is not None:
        counts = entry_coverage(self.system.documents(), self.s.facts, self.seeded)
        over = {f: c for f, c in counts.items() if c > step.max_entries_per_fact}
        self.check(not over, i, "check", f"facts in more than {step.max_entries_per_fact} entries: {over}")
    metrics: dict[str, MetricValue] = {}
    if self.indexed:
        metrics = _index_checks(self, i, step)
    if Capability.FILE_PATHS in self.capabilities:
        present = {d.id for d in self.system.documents()}
        for path in step.files_present:
            self.check(path in present, i, "check", f"file {path} is missing")
        for path in step.files_absent:
            self.check(path not in present, i, "check", f"file {path} still exists")
    if step.no_stray_files and Capability.STRAY_FILES in self.capabilities:
        stray = self.system.stray_files()  # type: ignore[attr-defined]
        self.check(not stray, i, "check", f"files written outside the memory root: {stray}")
    if step.system and Capability.SYSTEM_CHECKS in self.capabilities:
        for name, expected in step.system.items():
            problem = self.system.system_check(name, expected)  # type: ignore[attr-defined]
            self.check(problem is None, i, "check", f"system check {name}: {problem}")
    check_store(lambda ok, msg: self.check(ok, i, "check", msg), step, self.system.documents(),
                files=Capability.FILE_PATHS in self.capabilities,
                index=self.index_text() if self.indexed else None,
                lock_held=_lock_probe(self.system) if Capability.LOCKS in self.capabilities else None)
    skipped = "; ".join(skipped_parts) or None  # each "<part> needs capability <name>"
    self.probe(i, "check", covered=tuple(sorted(covered)), passed=len(self.failures) == n_before, metrics=metrics,
               skipped=skipped)

def _lock_probe(system: Any) -> Callable[[], bool | None]:
    """``system.lock_held``, or a probe answering None (the check then fails, naming the missing method)."""
    probe = getattr(system, "lock_held", None)
    return probe if callable(probe) else lambda: None


def _index_checks(self: _Run, i: int, step: CheckStep) -> dict[str, MetricValue]:
    index = self.index_text()
    stats = index_stats(index)
    if step.index_within_limits is not None:
        self.check(stats["within"] is step.index_within_limits, i, "check",
                   f"index within limits is {stats['within']}, expected {step.index_within_limits} "
                   f"({stats['lines']} lines, {stats['max_line_chars']} chars longest)")
    for text in step.index_contains:
        self.check(text in index, i, "check", f"MEMORY.md does not contain {text!r}")
    if step.index_lines is not None:
        self.check(stats["lines"] == step.index_lines, i, "check",
                   f"MEMORY.md has {stats['lines']} lines, expected {step.index_lines}")
    loaded = self.system.loaded_index() if step.loaded_index_contains else ""  # type: ignore[attr-defined]
    for text in step.loaded_index_contains:
        self.check(text in loaded, i, "check", f"the index as loaded into the prompt does not contain {text!r}")
    return index_metrics(stats)


def hold_extractions(system: Any, now: datetime) -> None:
    """A queue opens: the system acts as if an extraction were running (capability ``extract_queue``)."""
    hold = getattr(system, "hold_extractions", None)
    if not callable(hold) or not callable(getattr(system, "release_extractions", None)):
        raise HarnessError("the system declares capability extract_queue but has no hold_extractions/"
                           "release_extractions methods (docs/system-protocol.md)")
    hold(now=now)


def run_trailing(self: _Run, i: int, step: SessionStep, now: datetime) -> bool:
    """The queue's in-flight extraction finishes: the trailing run(s) get a span of their own and are checked
    against ``expect_trailing``; the step's probe carries the verdict."""
    before, seen = len(self.failures), len(self.sink.events)
    with self.t.operation("extract", step=i, now=now, session_id=step.session) as op:
        runs = self.system.release_extractions(now=now)  # type: ignore[attr-defined]
    events = self.sink.events[seen:] if Capability.EVENTS in self.capabilities else None
    ok = check_trailing(lambda good, msg: self.check(good, i, "extract", f"trailing run: {msg}"),
                        step.expect_trailing, runs, events)
    last = runs[-1][1] if runs else None
    self.judge(op, before, last.fallback_reason if last else None,
               last.error if last and last.status == "failed" else None)
    return ok
