"""What the report and the terminal say, computed once from typed records: the verdict, a card per strategy, the
flips, the suspicious passes and the per-probe drill-down (with the model's request and reply from the cassette)."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from harness.errors import HarnessError
from harness.evaluation import Comparison, GateResult, RunSummary, lower_is_better, p_text
from harness.replay import Probe, ScenarioResult
from harness.scenario._limits import MAX_RUN_FILE_BYTES
from harness.scenario._yaml import read_regular

CARD_METRICS: Final = ("recall.precision", "recall.recall", "recall.f1", "recall.mrr", "dedupe.retention",
                       "latency.recall_ms.p95")
VERDICT_METRIC: Final = "recall.f1"
VerdictStatus = Literal["pass", "fail", "incomplete"]
_STEP_LINE: Final = re.compile(r"^step (?P<step>\d+) \((?P<kind>[\w-]+), line (?P<line>\d+)\): (?P<message>.*)$", re.S)
_FILE_LINE: Final = re.compile(r"^(?P<file>[^:\n]+\.ya?ml):(?P<line>\d+): (?P<message>.*)$", re.S)


def sig3(value: float | None) -> str:
    """Three significant digits; "no data" for None."""
    if value is None:
        return "no data"
    if value == 0:
        return "0"
    return f"{value:.3g}"


def effect_words(c: Comparison) -> str:
    """"better/worse/no detectable change" with the effect and its CI in words (the metric's own direction)."""
    sign = -1 if lower_is_better(c.metric) else 1
    if c.significant:
        word = "better" if sign * c.delta > 0 else "worse"
        return (f"{word}: {c.metric} {c.delta:+.3g} (95% CI {c.ci95[0]:+.3g} to {c.ci95[1]:+.3g}, significant, "
                f"n = {c.n})")
    mde = f"; the smallest detectable effect is ±{c.mde:.3g}" if c.mde == c.mde and c.mde != float("inf") else ""
    # the CI excludes 0 yet p >= 0.05 only when every delta is the same (a point CI, the exact sign test's p)
    why = ("includes 0" if c.ci95[0] <= 0 <= c.ci95[1]
           else f"but every delta is the same: exact sign test {p_text(c.p_value, prefix='p')}")
    return (f"no detectable change: {c.metric} {c.delta:+.3g} (95% CI {c.ci95[0]:+.3g} to {c.ci95[1]:+.3g} "
            f"{why}, not significant, n = {c.n}{mde})")


@dataclass(frozen=True, slots=True)
class Delta:
    metric: str
    delta: float
    ci95: tuple[float, float]
    significant: bool
    good: bool
    against: str

    @property
    def css(self) -> str:
        return ("up" if self.good else "down") if self.significant else "flat"

    @property
    def words(self) -> str:
        return "significant" if self.significant else "not significant"


@dataclass(frozen=True, slots=True)
class Card:
    strategy: str
    passed: int
    total: int
    failed: int
    errors: int
    skipped: int
    metrics: dict[str, float | None]
    deltas: dict[str, Delta]


@dataclass(frozen=True, slots=True)
class Verdict:
    status: VerdictStatus
    line: str
    details: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Annotation:
    """A failed expectation located in its scenario file."""

    file: str
    line: int | None
    scenario: str
    strategy: str
    message: str

    def github(self) -> str:
        msg = self.message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        loc = f"file={self.file}" + (f",line={self.line}" if self.line else "")
        return f"::error {loc},title=memharness {self.scenario} [{self.strategy}]::{msg}"


def gate_failure(g: GateResult) -> str:
    """The one line every output (terminal annotation, JUnit) gives a failed gate."""
    value = "no data" if g.value is None else f"{g.value:.4g}"
    return f"gate failed: {g.name} (value {value})" + (f": {g.detail}" if g.detail else "")


def failure_annotations(results: Sequence[ScenarioResult]) -> list[Annotation]:
    """One annotation per failed expectation or scenario error, with the YAML line when the message names one."""
    out: list[Annotation] = []
    for r in results:
        messages = list(r.failures) if r.status == "failed" else [r.error_text] if r.error else []
        for text in messages:
            if not text:
                continue
            first = text.strip()
            m = _STEP_LINE.match(first)
            f = _FILE_LINE.match(first.splitlines()[0]) if not m else None
            line = int(m["line"]) if m else int(f["line"]) if f else None
            file = (f["file"] if f else "") or r.path or r.scenario
            out.append(Annotation(file, line, r.scenario, r.strategy, first.splitlines()[0] if f else first))
    return out


def _comparison_delta(c: Comparison, against: str) -> Delta:
    good = (c.delta < 0) if lower_is_better(c.metric) else (c.delta > 0)
    return Delta(c.metric, c.delta, c.ci95, c.significant, good, against)


def delta_css(c: Comparison) -> str:
    """``up`` (green) for a significant change for the better in the metric's own direction, ``down`` (red) for the
    worse, ``flat`` (grey) otherwise: the colour agrees with ``effect_words``."""
    return _comparison_delta(c, "").css


def cards(summary: RunSummary) -> list[Card]:
    """A card per strategy: headline metrics; deltas against the baseline (same strategy) when there is one, else
    against the first strategy."""
    names = list(summary.strategies)
    out = []
    for name, block in summary.strategies.items():
        deltas: dict[str, Delta] = {}
        if summary.baseline is not None:
            for c in summary.baseline.comparisons:
                if c.b == name:
                    deltas[c.metric] = _comparison_delta(c, "baseline")
        else:
            for c in summary.comparisons:
                if c.b == name and names and c.a == names[0]:
                    deltas[c.metric] = _comparison_delta(c, c.a)
        s = block.scenarios
        out.append(Card(name, s.passed, s.total, s.failed, s.errors, s.skipped,
                        {m: block.metric(m) for m in CARD_METRICS}, deltas))
    return out


def verdict(summary: RunSummary, results: Sequence[ScenarioResult]) -> Verdict:
    """pass / fail / incomplete, and against a baseline better / worse / no detectable change (in words)."""
    return verdict_of(summary, Counter(r.status for r in results))  # one pass: results are read back from disk


def verdict_of(summary: RunSummary, statuses: Counter[str]) -> Verdict:
    """:func:`verdict` from the count of the run's results by status (gathered by a pass made for more)."""
    errors, failed = statuses["error"], statuses["failed"]
    gates = [g for g in summary.gates if not g.passed]
    complete = bool(getattr(summary, "complete", True)) and not errors
    status: VerdictStatus = "incomplete" if not complete else "fail" if failed or gates or not summary.passed else "pass"
    counts = f"{statuses['passed']}/{sum(statuses.values())} scenario runs passed"
    parts = [counts]
    if skipped_runs := statuses["skipped"]:
        parts.append(f"{skipped_runs} skipped")
    if failed:
        parts.append(f"{failed} failed")
    if errors:
        parts.append(f"{errors} did not finish (error)")
    if summary.gates:
        judged = [g for g in summary.gates if not g.skipped]
        skipped = len(summary.gates) - len(judged)
        parts.append(f"{sum(g.passed for g in judged)}/{len(judged)} gates passed"
                     + (f" ({skipped} skipped)" if skipped else ""))
    details: list[str] = []
    if summary.baseline is not None:  # the evaluation's own verdict per strategy: the one the terminal prints
        details += [f"against the baseline: {v.text}" for v in summary.baseline.verdicts]
        if not summary.baseline.verdicts:  # a summary.json written before verdicts existed
            details += [f"{c.b} against the baseline: {effect_words(c)}" for c in summary.baseline.comparisons
                        if c.metric == VERDICT_METRIC]
    elif summary.comparisons:
        for c in summary.comparisons:
            if c.metric == VERDICT_METRIC:
                details.append(f"{c.b} against {c.a}: {effect_words(c)}")
    word = {"pass": "PASSED", "fail": "FAILED", "incomplete": "INCOMPLETE"}[status]
    return Verdict(status, f"{word} — " + ", ".join(parts), tuple(details))


@dataclass(frozen=True, slots=True)
class Flip:
    scenario: str
    step: int
    query: str
    a: str
    b: str
    a_ok: bool
    b_ok: bool


def _success(p: Probe) -> bool | None:
    if p.kind != "recall" or not p.graded:
        return None
    if not p.expected:
        return not p.selected
    return set(p.expected) <= set(p.covered)


def flip_inputs(r: ScenarioResult) -> Iterator[tuple[tuple[str, int, str], tuple[bool | None, str]]]:
    """What the flips keep of a result: each graded recall probe's (scenario, step, strategy) → (success,
    query)."""
    return (((p.scenario, p.step, p.strategy), (_success(p), p.query)) for p in r.probes
            if p.kind == "recall" and p.graded)


def flips_among(by: Mapping[tuple[str, int, str], tuple[bool | None, str]], strategies: Sequence[str]) -> list[Flip]:
    """Recall probes where the first strategy and another disagree on success (all facts found, or abstained), from
    what :func:`flip_inputs` kept of every result (only graded probes, and only the first strategy's keys sorted:
    a run's results are read back from disk one at a time, and a list of every probe was 5 MB at 10,000 scenario
    runs; issue 34)."""
    if len(strategies) < 2:
        return []
    out = []
    for scenario, step, _ in sorted(k for k in by if k[2] == strategies[0]):
        a, query = by[(scenario, step, strategies[0])]
        for other in strategies[1:]:
            q = by.get((scenario, step, other))
            if q is None:
                continue
            b = q[0]
            if a is not None and b is not None and a != b:
                out.append(Flip(scenario, step, query, strategies[0], other, a, b))
    return out


def suspicion(r: ScenarioResult) -> tuple[int, int] | None:
    """A passing result's recall probes at recall 0 and graded ones with expected facts, when some are at 0."""
    if r.status != "passed":
        return None
    graded = [p for p in r.probes if p.kind == "recall" and p.graded and p.expected]
    zero = sum(p.metric("recall") == 0 for p in graded)
    return (zero, len(graded)) if zero else None


@dataclass(frozen=True, slots=True)
class ModelCall:
    purpose: str
    prompt_version: str
    messages: tuple[tuple[str, str], ...]
    reply: str
    candidates: tuple[str, ...] = ()
    error: str = ""


@dataclass(frozen=True, slots=True)
class ProbeView:
    probe: Probe
    ranked: tuple[tuple[int, str, float | None], ...]
    facts: tuple[tuple[str, bool, str], ...]
    """(fact, covered, explanation)."""
    notes: tuple[str, ...]
    calls: tuple[ModelCall, ...] = field(default=())


def load_cassette_calls(directory: str | Path | None) -> dict[tuple[str, int], list[ModelCall]]:
    """Cassette entries grouped by (scenario, step); {} when there is no cassette (never fails the report)."""
    if not directory:
        return {}
    path = Path(directory) / "cassette.jsonl"
    out: dict[tuple[str, int], list[ModelCall]] = {}
    try:  # a regular file within the run-file limit (a FIFO never blocks the report); not splitlines(): U+2028
        lines = read_regular(path, limit=MAX_RUN_FILE_BYTES, error=HarnessError).decode("utf-8").split("\n")
    except (HarnessError, UnicodeDecodeError):
        return {}
    for line in lines:
        try:
            e = json.loads(line)
            req, resp = e.get("request", {}), e.get("response", {})
            messages = tuple((str(m.get("role", "")), str(m.get("content", ""))) for m in req.get("messages", ()))
            enum = (req.get("grammar") or {}).get("properties", {}).get("selected_memories", {}).get("items", {})
            resp = resp if isinstance(resp, Mapping) else {}
            call = ModelCall(str(e.get("purpose", "")), str(e.get("prompt_version", "")), messages,
                             str(resp.get("text") or ""), tuple(enum.get("enum", ())),
                             str(e.get("error") or resp.get("error") or ""))
            out.setdefault((str(e["scenario"]), int(e["step"])), []).append(call)
        except (ValueError, KeyError, TypeError, AttributeError, OverflowError, RecursionError):
            continue
    return out


def probe_view(p: Probe, calls: Sequence[ModelCall], candidates: int | None) -> ProbeView:
    """The drill-down of one probe: ranked selection with scores, facts covered or missed and why, notes."""
    ranked = tuple((i + 1, path, p.scores[i] if i < len(p.scores) else None) for i, path in enumerate(p.selected))
    facts = []
    for fact in p.expected:
        if fact in p.covered:
            facts.append((fact, True, "covered by a selected memory (its text contains every one of the fact's phrases)"))
        elif not p.selected:
            facts.append((fact, False, "missed: nothing was selected"))
        elif p.k is not None and len(p.selected) >= p.k:
            facts.append((fact, False, f"missed: none of the {len(p.selected)} selected memories matches it "
                                       f"(the selection is capped at k = {p.k})"))
        else:
            facts.append((fact, False, f"missed: none of the {len(p.selected)} selected memories matches it"))
    notes = []
    if p.kind == "recall" and not p.selected and p.graded:
        notes.append("Empty selection: precision is defined as 1 (nothing wrong was selected)"
                     + (", recall is 0 (expected facts were not found)." if p.expected else
                        "; with nothing expected this is a correct abstention."))
    if candidates is not None:
        scored = bool(p.scores)
        notes.append(f"{candidates} candidate memor{'y was' if candidates == 1 else 'ies were'} considered; "
                     + ("the replay records scores for the selected ones only." if scored else
                        "this strategy reports no scores (only the ranked strategies do: bm25, embedding, hybrid, "
                        "plugin rankers), so the order above is the selection's own."))
    if p.fallback_reason:
        notes.append(f"The model path fell back to the heuristic: {p.fallback_reason}.")
    if p.skipped:
        notes.append(f"Not run: {p.skipped}.")
    return ProbeView(p, ranked, tuple(facts), tuple(notes), tuple(calls))
