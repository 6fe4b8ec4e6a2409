"""The typed records evaluation produces: ``RunSummary`` (DESIGN §4 ``summary.json``) and what it holds.

Serialised once (``to_dict``) and read back (``from_dict``) into the same types; the report, the Markdown summary,
the gates and the CLI read attributes, never string keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from harness.evaluation._gates import GateResult
from harness.evaluation._stats import Comparison

SUMMARY_SCHEMA: Final = "memharness.summary/1"
Metrics = dict[str, float | None]


@dataclass(frozen=True, slots=True)
class ScenarioCounts:
    total: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    """Scenarios the system under test could not run (a capability it lacks)."""

    @property
    def words(self) -> str:
        """``3/4`` ``3/4, 1 skipped`` or ``all 4 skipped``: what the terminal, the markdown and the report print."""
        if self.total and self.skipped == self.total:
            return f"all {self.total} skipped"
        return f"{self.passed}/{self.total}" + (f", {self.skipped} skipped" if self.skipped else "")

    def to_dict(self) -> dict[str, int]:
        out = {"total": self.total, "passed": self.passed, "failed": self.failed, "errors": self.errors}
        if self.skipped:
            out["skipped"] = self.skipped
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScenarioCounts:
        return cls(int(data.get("total", 0)), int(data.get("passed", 0)), int(data.get("failed", 0)),
                   int(data.get("errors", 0)), int(data.get("skipped", 0)))


@dataclass(frozen=True, slots=True)
class StrategySummary:
    scenarios: ScenarioCounts
    metrics: Metrics

    def metric(self, name: str) -> float | None:
        if name.startswith("scenarios."):
            value = getattr(self.scenarios, name.split(".", 1)[1], None)
            return None if value is None else float(value)
        return self.metrics.get(name)

    def to_dict(self) -> dict[str, Any]:
        return {"scenarios": self.scenarios.to_dict(), "metrics": dict(self.metrics)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StrategySummary:
        return cls(ScenarioCounts.from_dict(data.get("scenarios", {})), dict(data.get("metrics", {})))


@dataclass(frozen=True, slots=True)
class ChangedProbe:
    """A recall probe whose selection or F1 differs between a baseline and a candidate run."""

    scenario: str
    step: int
    strategy: str
    query: str
    selected_base: tuple[str, ...]
    selected_cand: tuple[str, ...]
    f1_base: float | None
    f1_cand: float | None

    @property
    def harm(self) -> float:
        """How much worse the candidate is on this probe (F1 lost; a probe that vanished counts fully)."""
        return (self.f1_base or 0.0) - (self.f1_cand or 0.0)

    def to_dict(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "step": self.step, "strategy": self.strategy, "query": self.query,
                "selected_base": list(self.selected_base), "selected_cand": list(self.selected_cand),
                "f1_base": self.f1_base, "f1_cand": self.f1_cand}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ChangedProbe:
        return cls(d["scenario"], int(d["step"]), d["strategy"], d.get("query", ""), tuple(d.get("selected_base", ())),
                   tuple(d.get("selected_cand", ())), d.get("f1_base"), d.get("f1_cand"))


@dataclass(frozen=True, slots=True)
class Flip:
    """Something that passed in the baseline and does not now: a scenario (``step`` None) or one probe."""

    scenario: str
    strategy: str
    step: int | None
    kind: str
    now: str
    """``failed`` / ``error`` / ``missing`` (the candidate has no such scenario or probe)."""
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "strategy": self.strategy, "step": self.step, "kind": self.kind,
                "now": self.now, "detail": self.detail}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Flip:
        return cls(d["scenario"], d["strategy"], d.get("step"), d.get("kind", "scenario"), d.get("now", "failed"),
                   d.get("detail", ""))


@dataclass(frozen=True, slots=True)
class SuiteDelta:
    """A suite-level metric that has no per-probe pairing (dedupe, forget, index), base vs candidate."""

    strategy: str
    metric: str
    base: float | None
    cand: float | None

    @property
    def delta(self) -> float | None:
        return None if self.base is None or self.cand is None else self.cand - self.base

    def to_dict(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "metric": self.metric, "base": self.base, "cand": self.cand}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SuiteDelta:
        return cls(d["strategy"], d["metric"], d.get("base"), d.get("cand"))


@dataclass(frozen=True, slots=True)
class Verdict:
    """One line per strategy: ``better`` / ``worse`` / ``no detectable change``, with the effect in words."""

    strategy: str
    verdict: str
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "verdict": self.verdict, "text": self.text}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Verdict:
        return cls(d["strategy"], d["verdict"], d.get("text", ""))


@dataclass(frozen=True, slots=True)
class BaselineComparison:
    """A candidate run against a baseline run: paired comparisons per strategy, suite-level deltas, the probes
    that changed (most harmful first), what flipped from pass to fail, and a verdict per strategy."""

    dir: str
    comparisons: tuple[Comparison, ...]
    changed: tuple[ChangedProbe, ...]
    flips: tuple[Flip, ...] = ()
    suite: tuple[SuiteDelta, ...] = ()
    verdicts: tuple[Verdict, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"dir": self.dir, "comparisons": [c.to_dict() for c in self.comparisons],
                "changed": [c.to_dict() for c in self.changed], "flips": [f.to_dict() for f in self.flips],
                "suite": [d.to_dict() for d in self.suite], "verdicts": [v.to_dict() for v in self.verdicts]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> BaselineComparison:
        return cls(d.get("dir", ""), tuple(Comparison.from_dict(c) for c in d.get("comparisons", ())),
                   tuple(ChangedProbe.from_dict(c) for c in d.get("changed", ())),
                   tuple(Flip.from_dict(f) for f in d.get("flips", ())),
                   tuple(SuiteDelta.from_dict(x) for x in d.get("suite", ())),
                   tuple(Verdict.from_dict(v) for v in d.get("verdicts", ())))


@dataclass(frozen=True, slots=True)
class RunSummary:
    """Everything gateable about a run."""

    run_id: str
    created_at: str
    strategies: dict[str, StrategySummary]
    comparisons: tuple[Comparison, ...] = ()
    gates: tuple[GateResult, ...] = ()
    passed: bool = True
    meta: dict[str, Any] = field(default_factory=dict)
    baseline: BaselineComparison | None = None
    fuzz: dict[str, Any] | None = None
    incomplete: tuple[str, ...] = ()
    """Scenario × strategy runs that could not run to the end (errors: a cassette miss, a system error). When any,
    the metrics cover a partial suite and the run is INCOMPLETE."""

    @property
    def complete(self) -> bool:
        return not self.incomplete

    @property
    def verdict(self) -> str:
        """``incomplete`` / ``failed`` / ``passed``."""
        return "incomplete" if self.incomplete else "passed" if self.passed else "failed"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema": SUMMARY_SCHEMA, "run_id": self.run_id, "created_at": self.created_at,
            "strategies": {k: v.to_dict() for k, v in self.strategies.items()},
            "comparisons": [c.to_dict() for c in self.comparisons], "gates": [g.to_dict() for g in self.gates],
            "passed": self.passed, "complete": self.complete, "incomplete": list(self.incomplete),
            "meta": dict(self.meta),
        }
        if self.baseline is not None:
            out["baseline"] = self.baseline.to_dict()
        if self.fuzz is not None:
            out["fuzz"] = self.fuzz
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunSummary:
        return cls(
            run_id=d.get("run_id", ""), created_at=d.get("created_at", ""),
            strategies={k: StrategySummary.from_dict(v) for k, v in d.get("strategies", {}).items()},
            comparisons=tuple(Comparison.from_dict(c) for c in d.get("comparisons", ())),
            gates=tuple(GateResult.from_dict(g) for g in d.get("gates", ())), passed=bool(d.get("passed", False)),
            meta=dict(d.get("meta", {})),
            baseline=BaselineComparison.from_dict(d["baseline"]) if d.get("baseline") else None,
            fuzz=d.get("fuzz"), incomplete=tuple(d.get("incomplete", ())),
        )
