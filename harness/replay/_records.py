"""The typed records a replay produces: one ``Probe`` per graded step, one ``ScenarioResult`` per scenario × strategy.

Created once in replay, serialised once (``to_row``) to ``probes.jsonl`` / ``results.jsonl`` and read back
(``from_row``) into the same types; nothing downstream reads them by string key.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

ProbeKind = Literal["recall", "forget", "check", "dream", "extract"]
MetricValue = float | int | bool | None


def _by_fields(self: Any) -> tuple[Any, tuple[Any, ...]]:
    """Pickle a record as its class and field values, rebuilt by ``cls(*values)``: a slotted dataclass's own
    ``__setstate__`` calls ``fields()`` for every object, and a run's report reads each result back from the spool
    (``_spool``) a few dozen times, in the run's process after its ``--jobs`` workers have finished (issue 34)."""
    return type(self), tuple([getattr(self, name) for name in type(self).__slots__])


_OUTCOME_FIELDS: Final = ("status", "reason", "fallback_reason", "error_message")
_KIND_FIELDS: Final[Mapping[str, tuple[str, ...]]] = {
    "extract": _OUTCOME_FIELDS,
    "dream": _OUTCOME_FIELDS,
    "recall": ("fallback_reason", "k", "scores"),
    "forget": ("fallback_reason",),
    "check": (),
}
"""The optional fields each kind of probe row carries (DESIGN §4 keys are always present)."""


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Model calls made during one probe."""

    calls: int = 0
    input: int = 0
    output: int = 0
    replayed: int = 0
    """Calls answered from a cassette."""
    cost_usd: float | None = None
    """Summed cost when the provider prices the model."""

    __reduce__ = _by_fields

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"calls": self.calls, "input": self.input, "output": self.output,
                               "replayed": self.replayed}
        if self.cost_usd is not None:
            out["cost_usd"] = round(self.cost_usd, 8)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TokenUsage:
        return cls(int(data.get("calls", 0)), int(data.get("input", 0)), int(data.get("output", 0)),
                   int(data.get("replayed", 0)), data.get("cost_usd"))


NO_TOKENS: Final = TokenUsage()
"""No model call: the one record every such probe shares (frozen, so sharing it is safe)."""


@dataclass(frozen=True, slots=True)
class Probe:
    """One graded step of one scenario × strategy (DESIGN §4 ``probes.jsonl`` row)."""

    scenario: str
    step: int
    kind: ProbeKind
    strategy: str
    query: str = ""
    selected: tuple[str, ...] = ()
    """Recall: selected record ids in rank order. Forget: removed ids. Extract: written ids. Dream: topics touched."""
    expected: tuple[str, ...] = ()
    covered: tuple[str, ...] = ()
    metrics: Mapping[str, MetricValue] = field(default_factory=dict)
    passed: bool = True
    duration_ms: float = 0.0
    tokens: TokenUsage = NO_TOKENS
    strategy_used: str = ""
    status: str | None = None
    reason: str | None = None
    fallback_reason: str | None = None
    error_message: str | None = None
    k: int | None = None
    scores: tuple[float, ...] = ()
    final: bool = False
    """The end-of-scenario check."""
    skipped: str | None = None
    """Why the step did not run (a capability the system lacks); skipped probes feed no metric."""
    quality_misses: tuple[str, ...] = ()
    """A real model's recall: the scenario's quality expectations its choice missed (not failures; ``_quality``)."""

    __reduce__ = _by_fields

    def __post_init__(self) -> None:
        if not self.strategy_used:  # the strategy that produced the answer defaults to the one the run asked for
            object.__setattr__(self, "strategy_used", self.strategy)

    def metric(self, name: str) -> float | None:
        """A numeric metric (booleans as 0/1), None when absent or undefined."""
        value = self.metrics.get(name)
        return None if value is None else float(value)

    @property
    def graded(self) -> bool:
        """Ran (not skipped)."""
        return self.skipped is None

    def to_row(self) -> dict[str, Any]:
        row: dict[str, Any] = {
            "scenario": self.scenario, "step": self.step, "kind": self.kind, "strategy": self.strategy,
            "query": self.query, "selected": list(self.selected), "expected": list(self.expected),
            "covered": list(self.covered), "metrics": dict(self.metrics), "passed": self.passed,
            "duration_ms": round(self.duration_ms, 3), "tokens": self.tokens.to_dict(),
            "strategy_used": self.strategy_used or self.strategy,
        }
        for name in _KIND_FIELDS[self.kind]:
            value = getattr(self, name)
            row[name] = list(value) if isinstance(value, tuple) else value
        if self.error_message is not None:  # a recall or forget that failed without raising carries it too
            row["error_message"] = self.error_message
        if self.final:
            row["final"] = True
        if self.skipped is not None:
            row["skipped"] = self.skipped
        if self.quality_misses:
            row["quality_misses"] = list(self.quality_misses)
        return row

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Probe:
        return cls(
            scenario=row["scenario"], step=int(row["step"]), kind=row["kind"], strategy=row["strategy"],
            query=row.get("query", ""), selected=tuple(row.get("selected", ())),
            expected=tuple(row.get("expected", ())), covered=tuple(row.get("covered", ())),
            metrics=dict(row.get("metrics", {})), passed=bool(row.get("passed", True)),
            duration_ms=float(row.get("duration_ms", 0.0)), tokens=TokenUsage.from_dict(row.get("tokens", {})),
            strategy_used=row.get("strategy_used", row["strategy"]), status=row.get("status"),
            reason=row.get("reason"), fallback_reason=row.get("fallback_reason"),
            error_message=row.get("error_message"), k=row.get("k"), scores=tuple(row.get("scores", ())),
            final=bool(row.get("final", False)), skipped=row.get("skipped"),
            quality_misses=tuple(row.get("quality_misses", ())),
        )


ScenarioStatus = Literal["passed", "failed", "error", "skipped"]


@dataclass(frozen=True, slots=True)
class ScenarioResult:
    """The outcome of one scenario × strategy."""

    scenario: str
    strategy: str
    passed: bool
    failures: tuple[str, ...]
    probes: tuple[Probe, ...]
    trace_id: str
    error: str | None = None
    duration_ms: float = 0.0
    description: str = ""
    tags: tuple[str, ...] = ()
    prompt_versions: tuple[str, ...] = ()
    path: str = ""
    """The scenario file (for annotations)."""
    skipped: str | None = None
    """Why the whole scenario did not run (e.g. it seeds raw files and the system cannot)."""
    system_ms: float | None = None
    """Milliseconds spent inside calls into the system under test (its construction, seeds, operations, reads,
    ``close``): the rest of ``duration_ms`` is the harness's own work. None in runs from before it was measured."""

    __reduce__ = _by_fields

    def __post_init__(self) -> None:  # round 20: a system's text (its error, an exception) is written as escapes
        from harness.errors import shown_text

        if (shown := tuple(shown_text(f) for f in self.failures)) != tuple(self.failures):
            object.__setattr__(self, "failures", shown)
        for name in ("error", "skipped"):
            if (text := getattr(self, name)) is not None:
                object.__setattr__(self, name, shown_text(text))

    @property
    def status(self) -> ScenarioStatus:
        if self.error:
            return "error"
        if self.skipped:
            return "skipped"
        return "passed" if self.passed else "failed"

    @property
    def error_text(self) -> str:
        """The error as every output that already names ``scenario [strategy]`` shows it: without that prefix, which
        the stored ``error`` carries for readers of ``results.jsonl`` alone (a name given twice confused users)."""
        error = self.error or ""
        head = f"{self.scenario} ["  # its strategy as the replay named it: a merged run's label adds the system's
        end = error.find("] ", len(head)) if error.startswith(head) else -1
        text = error[end + 2:] if end > 0 and "\n" not in error[:end] else error
        return text if text.strip() else error

    def with_probes(self, probes: tuple[Probe, ...]) -> ScenarioResult:
        return replace(self, probes=probes)

    def to_row(self) -> dict[str, Any]:
        """The ``results.jsonl`` row (probes live in ``probes.jsonl``)."""
        row: dict[str, Any] = {
            "scenario": self.scenario, "strategy": self.strategy, "passed": self.passed,
            "failures": list(self.failures), "trace_id": self.trace_id, "error": self.error,
            "duration_ms": self.duration_ms, "description": self.description, "tags": list(self.tags),
            "prompt_versions": list(self.prompt_versions), "status": self.status,
        }
        if self.path:
            row["path"] = self.path
        if self.skipped:
            row["skipped"] = self.skipped
        if self.system_ms is not None:
            row["system_ms"] = round(self.system_ms, 3)
        row["probe_kinds"] = dict(sorted(Counter(p.kind for p in self.probes).items()))  # read back against
        return row  # probes.jsonl: a lost check or dream row is found (round 15)

    @classmethod
    def from_row(cls, row: Mapping[str, Any], probes: tuple[Probe, ...]) -> ScenarioResult:
        return cls(
            scenario=row["scenario"], strategy=row["strategy"], passed=bool(row["passed"]),
            failures=tuple(row.get("failures", ())), probes=probes, trace_id=row.get("trace_id", ""),
            error=row.get("error"), duration_ms=float(row.get("duration_ms", 0.0)),
            description=row.get("description", ""), tags=tuple(row.get("tags", ())),
            prompt_versions=tuple(row.get("prompt_versions", ())), path=row.get("path", ""),
            skipped=row.get("skipped"), system_ms=float(row["system_ms"]) if row.get("system_ms") is not None else None,
        )


_SHARED_FIELDS: Final = ("metrics", "selected", "expected", "covered", "scores", "quality_misses")
_SHARED_LIMIT: Final = 4096
_shared: dict[tuple[str, tuple[Any, ...]], Any] = {}


def shared_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` of a new probe with each metrics mapping and tuple replaced by an equal one an earlier probe holds,
    when there is one (values of the same types: ``1``, ``1.0`` and ``True`` are equal but written differently).
    A run holds every probe to its end, and most of them repeat a few metric blocks and fact lists (issue 34: 454
    distinct metric blocks over 33,334 probes of a generated suite). Probes are frozen and nothing changes a
    probe's metrics once it is made, so sharing is safe; at most ``_SHARED_LIMIT`` values are remembered."""
    for name in _SHARED_FIELDS:
        value = fields.get(name)
        if not value:
            continue
        items = tuple(value.items()) if isinstance(value, dict) else value if isinstance(value, tuple) else None
        if items is None:
            continue
        key = (name, items)
        try:
            held = _shared.get(key)
        except TypeError:  # an unhashable value: kept as it is
            continue
        if held is None:
            if len(_shared) >= _SHARED_LIMIT:
                _shared.clear()
            _shared[key] = value
        elif _same_types(held, value):
            fields[name] = held
    return fields


def _same_types(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return all(type(x) is type(y) for x, y in zip(a.values(), b.values(), strict=True))
    return all(type(x) is type(y) for x, y in zip(a, b, strict=True))
