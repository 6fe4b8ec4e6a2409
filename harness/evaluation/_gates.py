"""CI gates (DESIGN §6): absolute thresholds per strategy and metric, and CI-aware regression gates."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from harness.errors import GateFileError, one_line
from harness.evaluation._stats import Comparison, p_text
from harness.replay import column_label, split_column
from harness.scenario import STRATEGY_NAMES

_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")

if TYPE_CHECKING:
    from harness.evaluation._records import BaselineComparison, StrategySummary

LOWER_IS_BETTER: Final = frozenset({"recall.fallbacks", "recall.quality_misses", "dedupe.residual_duplicates",
                                    "index.max_line_chars", "index.max_lines",
                                    "index.max_bytes", "latency.recall_ms.p50", "latency.recall_ms.p95"})

def _plugin_metrics() -> tuple[str, ...]:
    from harness.plugins import metric_names

    return metric_names()


def lower_is_better(metric: str) -> bool:
    """Whether a smaller value of ``metric`` is better (built-ins, and plugin metrics registered so)."""
    from harness.plugins import REGISTRY

    plugin = REGISTRY.get(metric)
    return metric in LOWER_IS_BETTER or (plugin is not None and plugin.lower_is_better)


GATE_KEYS: Final = frozenset({"metric", "strategy", "min", "max", "max_drop", "vs", "name", "system"})
KNOWN_METRICS: Final = frozenset({
    "recall.precision", "recall.recall", "recall.f1", "recall.mrr", "recall.ndcg", "recall.abstention_accuracy",
    "recall.probes", "recall.fallbacks", "recall.quality_misses", "dedupe.residual_duplicates", "dedupe.retention",
    "dedupe.dreams_run",
    "forget.precision", "forget.recall", "index.max_lines", "index.max_bytes", "index.max_line_chars",
    "index.within_limits", "latency.recall_ms.p50", "latency.recall_ms.p95", "llm.calls", "llm.tokens.input",
    "llm.tokens.output", "llm.replayed", "llm.cost_usd", "harness.system_ms", "harness.overhead_ms",
    "scenarios.total", "scenarios.passed", "scenarios.failed", "scenarios.errors", "scenarios.skipped",
})
"""Every metric a gate may name (a misspelt metric would otherwise be 'not measured' forever)."""


@dataclass(frozen=True, slots=True)
class Gate:
    """One gate: ``min``/``max`` on a metric, or ``max_drop`` against a baseline run or another strategy."""

    metric: str
    strategy: str | None = None
    min: float | None = None
    max: float | None = None
    max_drop: float | None = None
    vs: str | None = None
    """``baseline`` or a strategy name (for ``max_drop``)."""
    name: str | None = None
    system: str | None = None
    """Apply only when the system under test has this name (``reference``, ``sqlite``…)."""

    def holds(self, value: float) -> bool:
        """``value`` within ``min`` / ``max`` (both inclusive)."""
        return (self.min is None or value >= self.min) and (self.max is None or value <= self.max)

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        who = f"{self.strategy} " if self.strategy else ""
        if self.max_drop is not None:
            return f"{who}{self.metric} drop vs {self.vs} <= {self.max_drop}"
        parts = []
        if self.min is not None:
            parts.append(f">= {self.min}")
        if self.max is not None:
            parts.append(f"<= {self.max}")
        return f"{who}{self.metric} {' and '.join(parts)}"


@dataclass(frozen=True, slots=True)
class GateResult:
    gate: Gate
    passed: bool
    value: float | None
    detail: str = ""
    skipped: bool = False
    """The gate names a strategy this run did not include."""

    @property
    def name(self) -> str:
        return self.gate.label

    def to_dict(self) -> dict[str, Any]:
        """The ``summary.json`` entry; its bounds (``min``, ``max``, ``max_drop``, ``vs``, ``system``, those set)
        are written since round 17, so a reader can tell whether ``passed`` and ``value`` are the rows'."""
        bounds = {k: getattr(self.gate, k) for k in _BOUNDS if getattr(self.gate, k) is not None}
        return {"name": self.gate.label, "passed": self.passed, "value": self.value, "detail": self.detail,
                "metric": self.gate.metric, "strategy": self.gate.strategy, "skipped": self.skipped, **bounds}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> GateResult:
        """As ``to_dict`` wrote it: ``name`` and ``passed`` are read (a missing one is a KeyError, the reader's
        located error), never defaulted; the rest as written (``read_run`` checks their types)."""
        gate = Gate(d.get("metric", ""), d.get("strategy"), name=d["name"], **{k: d.get(k) for k in _BOUNDS})
        return cls(gate, d["passed"], d.get("value"), d.get("detail", ""), d.get("skipped", False))


_BOUNDS: Final = ("min", "max", "max_drop", "vs", "system")


MAX_GATES_BYTES: Final = 1024 * 1024


def load_gates(path: Path) -> list[Gate]:
    """Parse a gates TOML file (``[[gate]]`` tables); errors name the file and the gate."""
    from harness.scenario._toml import key_line, member_line, parse_toml, table_array
    from harness.scenario._yaml import decode_utf8, read_regular

    # a FIFO or a device is refused without blocking, as every file the harness reads
    text = decode_utf8(read_regular(path, limit=MAX_GATES_BYTES, error=GateFileError), path, GateFileError)
    data = parse_toml(path, text, GateFileError)
    unknown = set(data) - {"gate"}
    if unknown:
        first = sorted(unknown)[0]
        raise GateFileError(f"{path}:{key_line(text, first)}: {first}: unknown top-level key; expected [[gate]] tables")
    gates = []
    for i, (header, raw) in enumerate(table_array(path, text, data, "gate", GateFileError)):
        def where_of(key: str, *, _header: int = header, _i: int = i) -> str:  # each error names its line (round 12)
            return f"{path}:{member_line(text, _header, key)}: gate {_i + 1}"
        where = f"{path}:{header}: gate {i + 1}"
        extra = set(raw) - GATE_KEYS
        if extra:
            raise GateFileError(f"{where_of(sorted(extra)[0])}: unknown key {sorted(extra)[0]!r}; expected "
                                f"{', '.join(sorted(GATE_KEYS))}")
        if not isinstance(raw.get("metric"), str):
            raise GateFileError(f"{where_of('metric')}: 'metric' must be a string like \"recall.precision\"")
        if raw["metric"] not in KNOWN_METRICS and raw["metric"] not in _plugin_metrics():
            raise GateFileError(f"{where_of('metric')}: unknown metric {raw['metric']!r}; expected one of "
                                f"{', '.join(sorted(KNOWN_METRICS))}")
        for key in ("min", "max", "max_drop"):
            if key in raw and (not isinstance(raw[key], (int, float)) or isinstance(raw[key], bool)
                               or not math.isfinite(raw[key])):
                raise GateFileError(f"{where_of(key)}: {key!r} must be a finite number, got {raw[key]!r}")
        for key in ("strategy", "vs", "name", "system"):
            if key in raw and not isinstance(raw[key], str):
                raise GateFileError(f"{where_of(key)}: {key!r} must be text, got {raw[key]!r}")
        if isinstance(raw.get("name"), str) and _CONTROL.search(raw["name"]):
            raise GateFileError(f"{where_of('name')}: 'name' holds a control character or line break "
                                f"('{one_line(raw['name'])[:80]}'); a gate's name is one printable line")
        if "strategy" in raw and raw["strategy"] not in STRATEGY_NAMES:
            raise GateFileError(f"{where_of('strategy')}: unknown strategy {raw['strategy']!r}; expected one of "
                                f"{', '.join(STRATEGY_NAMES)}")
        if isinstance(raw.get("vs"), str) and raw["vs"] != "baseline" and raw["vs"] not in STRATEGY_NAMES:
            raise GateFileError(f"{where_of('vs')}: unknown vs {raw['vs']!r}; expected \"baseline\" or one of "
                                f"{', '.join(STRATEGY_NAMES)}")  # round 14: compare dropped a 'basline' gate unsaid
        if "max_drop" in raw:
            if not isinstance(raw.get("vs"), str):
                raise GateFileError(f"{where_of('max_drop')}: 'max_drop' needs vs = \"baseline\" or a strategy name")
        elif "min" not in raw and "max" not in raw:
            raise GateFileError(f"{where}: expected 'min', 'max' or 'max_drop'")
        gates.append(Gate(raw["metric"], raw.get("strategy"), _f(raw.get("min")), _f(raw.get("max")),
                          _f(raw.get("max_drop")), raw.get("vs"), raw.get("name"), raw.get("system")))
    return gates


def _f(value: Any) -> float | None:
    return None if value is None else float(value)


FLIP_GATE: Final = Gate("baseline.flips", max=0, vs="baseline", name="no check flips from pass to fail vs baseline")


def evaluate(gates: Sequence[Gate], strategies: Mapping[str, StrategySummary], *,
             comparisons: Sequence[Comparison] = (), baseline: BaselineComparison | None = None,
             system: str = "reference") -> list[GateResult]:
    """Evaluate every gate against every summary column it names (a gate without ``strategy`` or ``system``
    applies to each strategy / system of the run; ``system`` is the name of the run's own, unsuffixed columns).
    With a baseline, a built-in gate fails on any scenario or probe that passed in the baseline and fails now."""
    out: list[GateResult] = []
    if baseline is not None:
        flips = baseline.flips
        detail = "; ".join(f"{f.scenario} [{f.strategy}]" + (f" step {f.step}" if f.step is not None else "")
                           + f" now {f.now}" for f in flips[:10]) + (f" (+{len(flips) - 10} more)" if len(flips) > 10 else "")
        out.append(GateResult(FLIP_GATE, passed=not flips, value=float(len(flips)), detail=detail))
    columns = {c: split_column(c, system) for c in strategies}
    systems = sorted({sys_name for _, sys_name in columns.values()})
    for gate in gates:
        if gate.system and gate.system not in systems:  # said, with the name it may have meant (a typo is
            near = difflib.get_close_matches(gate.system, systems, n=1, cutoff=0.75)  # no error: a gates file
            hint = f" (did you mean {near[0]!r}?)" if near else ""  # serves runs of other systems too)
            out.append(GateResult(gate, passed=True, value=None, skipped=True,
                                  detail=f"skipped: for system {gate.system}, this run is "
                                         f"{', '.join(systems) or system}{hint}"))
            continue
        targets = [c for c, (strat, sys_name) in columns.items()
                   if (not gate.strategy or strat == gate.strategy) and (not gate.system or sys_name == gate.system)]
        if not targets:
            out.append(GateResult(gate, passed=True, value=None, skipped=True,
                                  detail=f"skipped: strategy {gate.strategy} is not in this run"))
            continue
        for column in targets:
            _, sys_name = columns[column]
            vs = gate.vs if gate.vs in (None, "baseline") else column_label(gate.vs, sys_name, system)
            bound = Gate(gate.metric, column, gate.min, gate.max, gate.max_drop, vs, gate.name, gate.system)
            if gate.max_drop is not None:
                paired = any(c.metric == gate.metric and c.a == vs and c.b == column for c in comparisons)
                if vs != "baseline" and not paired and not gate.system and sys_name != system:
                    out.append(GateResult(bound, passed=True, value=None, skipped=True,
                                          detail=f"skipped: {column} and {vs} share no probe to pair on {sys_name}"))
                    continue
                out.append(_regression(bound, comparisons, baseline))
                continue
            out.append(_bounded(bound, strategies[column].metric(gate.metric),
                                f"not measured: no probe of strategy {column} produced {gate.metric}"))
    return out


def _bounded(gate: Gate, value: float | None, not_measured: str = "") -> GateResult:
    """A ``min`` / ``max`` gate on a column's value. Nothing in the run measures it (no such probes, or the system
    lacks the capability, e.g. no index): skipped, never passing on a value."""
    if value is None or math.isnan(value):
        return GateResult(gate, passed=True, value=None, skipped=True, detail=not_measured)
    return GateResult(gate, passed=gate.holds(value), value=round(value, 6))


def _regression(gate: Gate, comparisons: Sequence[Comparison], baseline: BaselineComparison | None) -> GateResult:
    """Paired metrics fire only on a significant drop whose whole 95% CI lies beyond max_drop in the metric's worse
    direction (below −max_drop, or above +max_drop for a lower-is-better metric); suite-level metrics (vs baseline)
    fire when the candidate is worse than the baseline by more than max_drop."""
    assert gate.max_drop is not None
    if gate.vs == "baseline":
        if baseline is None:
            return GateResult(gate, passed=True, value=None, skipped=True, detail="skipped: no --baseline given")
        rows = [c for c in baseline.comparisons if c.metric == gate.metric and c.b == gate.strategy]
        if not rows:
            suite = [d for d in baseline.suite if d.metric == gate.metric and d.strategy == gate.strategy]
            if suite and suite[0].base is not None and suite[0].cand is None:
                return GateResult(gate, passed=False, value=None,
                                  detail=f"measured in the baseline ({suite[0].base:g}), no longer measured")
            if suite and suite[0].delta is not None:
                d = suite[0]
                assert d.delta is not None
                loss = d.delta if lower_is_better(gate.metric) else -d.delta
                return GateResult(gate, passed=loss <= gate.max_drop, value=round(d.delta, 6),
                                  detail=f"baseline {d.base:g} → {d.cand:g}")
    else:
        rows = [c for c in comparisons if c.metric == gate.metric and c.a == gate.vs and c.b == gate.strategy]
    if not rows:
        if gate.vs == gate.strategy:
            return GateResult(gate, passed=True, value=None, detail="compared with itself")
        detail = f"no paired comparison for {gate.metric} vs {gate.vs}"
        return GateResult(gate, passed=gate.vs == "baseline", value=None, skipped=gate.vs == "baseline", detail=detail)
    row = rows[0]
    low, high = row.ci95
    # a drop (in the metric's own direction) whose whole CI lies beyond max_drop, and significant (CI and p agree)
    fired = row.p_value < 0.05 and ((low > gate.max_drop) if lower_is_better(gate.metric) else (high < -gate.max_drop))
    return GateResult(gate, passed=not fired, value=round(row.delta, 6),
                      detail=f"delta {row.delta:+.4f}, 95% CI [{low:+.4f}, {high:+.4f}], n={row.n}, "
                             f"{p_text(row.p_value, prefix='p')}")


def recheck(written: GateResult, strategies: Mapping[str, StrategySummary], comparisons: Sequence[Comparison],
            system: str = "reference") -> GateResult | None:
    """What ``evaluate`` gives the gate ``written`` names, for its own column, from ``strategies`` and
    ``comparisons`` (a run's, recomputed from its rows; ``system`` the run's primary); None when the run directory
    alone cannot tell: a gate written before its bounds were (round 17), one against the baseline (another run), the
    baseline's flip gate, a gate for another system or strategy than the run's, a regression gate skipped for want
    of a pair, or a plugin metric whose plugin is not loaded."""
    gate = written.gate
    if (gate.min is None and gate.max is None and gate.max_drop is None) or gate.vs == "baseline" \
            or gate.strategy is None or gate.strategy not in strategies \
            or (gate.system is not None and split_column(gate.strategy, system)[1] != gate.system) \
            or (gate.metric not in KNOWN_METRICS and gate.metric not in _plugin_metrics()):
        return None
    if gate.max_drop is not None:
        paired = any(c.metric == gate.metric and c.a == gate.vs and c.b == gate.strategy for c in comparisons)
        return _regression(gate, comparisons, None) if paired or not written.skipped else None
    return _bounded(gate, strategies[gate.strategy].metric(gate.metric))
