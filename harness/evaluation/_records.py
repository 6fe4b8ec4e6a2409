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

    def to_dict(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "step": self.step, "strategy": self.strategy, "query": self.query,
                "selected_base": list(self.selected_base), "selected_cand": list(self.selected_cand),
                "f1_base": self.f1_base, "f1_cand": self.f1_cand}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ChangedProbe:
        return cls(d["scenario"], int(d["step"]), d["strategy"], d.get("query", ""), tuple(d.get("selected_base", ())),
                   tuple(d.get("selected_cand", ())), d.get("f1_base"), d.get("f1_cand"))


@dataclass(frozen=True, slots=True)
class BaselineComparison:
    """A candidate run against a baseline run: paired comparisons per strategy and the probes that changed."""

    dir: str
    comparisons: tuple[Comparison, ...]
    changed: tuple[ChangedProbe, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"dir": self.dir, "comparisons": [c.to_dict() for c in self.comparisons],
                "changed": [c.to_dict() for c in self.changed]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> BaselineComparison:
        return cls(d.get("dir", ""), tuple(Comparison.from_dict(c) for c in d.get("comparisons", ())),
                   tuple(ChangedProbe.from_dict(c) for c in d.get("changed", ())))


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

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema": SUMMARY_SCHEMA, "run_id": self.run_id, "created_at": self.created_at,
            "strategies": {k: v.to_dict() for k, v in self.strategies.items()},
            "comparisons": [c.to_dict() for c in self.comparisons], "gates": [g.to_dict() for g in self.gates],
            "passed": self.passed, "meta": dict(self.meta),
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
            fuzz=d.get("fuzz"),
        )
