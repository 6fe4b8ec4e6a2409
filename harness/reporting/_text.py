"""Text outputs of a run: JUnit XML (one testcase per scenario × strategy) and the Markdown summary."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final

from harness.errors import one_line
from harness.evaluation import GateResult, RunSummary, p_text
from harness.replay import Probe, ScenarioResult
from harness.reporting._view import effect_words, flip_inputs, flips_among, gate_failure, verdict_of

HEADLINE: Final = ("recall.precision", "recall.recall", "recall.f1", "recall.mrr", "recall.ndcg",
                   "recall.abstention_accuracy", "recall.fallbacks", "recall.quality_misses",
                   "dedupe.residual_duplicates", "dedupe.retention", "index.within_limits",
                   "latency.recall_ms.p95", "llm.calls", "llm.replayed", "llm.tokens.input", "llm.tokens.output",
                   "llm.cost_usd")


def headline() -> tuple[str, ...]:
    """The headline metrics every output shows: the built-ins, then each registered plugin metric."""
    from harness.plugins import metric_names

    return (*HEADLINE, *metric_names())


def junit_xml(results: Sequence[ScenarioResult], gates: Sequence[GateResult] = ()) -> str:
    """One testcase per scenario × strategy (failure messages name the step; the trace id is a property) and one
    per gate, in the ``memharness.gates`` suite: a failed gate (a baseline regression included) is a failed test
    case, a gate naming a strategy the run lacks a skipped one."""
    return "".join(junit_chunks(results, gates))


_NOT_XML: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
"""The characters XML 1.0 cannot hold (§2.2 Char), escaped or not: any of them made the whole junit.xml unreadable
(round 19: an ESC in a model name, through "stale: … this run asks <model>"). Each is written as its escape."""


def _xml_chars(text: str) -> str:
    return _NOT_XML.sub(lambda m: one_line(m.group()), text)


_CASES: Final = "<memharness-cases />"
"""Where a suite's test cases go in the document's skeleton (a tag name no JUnit reader knows; data in attributes is
escaped, so the text cannot come from a result)."""


def junit_chunks(results: Sequence[ScenarioResult], gates: Sequence[GateResult] = ()) -> Iterator[str]:
    """:func:`junit_xml`'s text in pieces, one test case at a time: the whole tree of a large suite was the largest
    object of writing a run (18 MB at 10,000 scenario runs; issue 34). The skeleton (the suites without their cases)
    is indented and serialised as the whole tree would be, and each case as it would be at its depth."""
    suites = ET.Element("testsuites", name="memharness")
    tally: dict[str, tuple[list[str], array[float], array[int]]] = {}  # results are read back one at a time: not kept
    for i, r in enumerate(results):
        statuses, ms, at = tally.setdefault(r.strategy, ([], array("d"), array("q")))
        statuses.append(r.status)
        ms.append(r.duration_ms)
        at.append(i)
    cases: list[Iterator[ET.Element]] = []
    for strategy, (statuses, ms, at) in tally.items():
        suite = ET.SubElement(suites, "testsuite", name=f"memharness.{strategy}", tests=str(len(statuses)),
                              failures=str(statuses.count("failed")), errors=str(statuses.count("error")),
                              skipped=str(statuses.count("skipped")), time=f"{sum(ms) / 1000:.3f}")
        ET.SubElement(suite, _CASES[1:-3])
        cases.append(_result_cases(strategy, (results[i] for i in at)))  # read once more: not a pass per strategy
    if gates:
        suite = ET.SubElement(suites, "testsuite", name="memharness.gates", tests=str(len(gates)),
                              failures=str(sum(not g.passed and not g.skipped for g in gates)), errors="0",
                              skipped=str(sum(g.skipped for g in gates)), time="0.000")
        ET.SubElement(suite, _CASES[1:-3])
        cases.append(_gate_cases(gates))
    ET.indent(suites)
    skeleton = ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"
    pieces = skeleton.split(_CASES)
    yield _xml_chars(pieces[0])
    for piece, suite_cases in zip(pieces[1:], cases, strict=True):
        for n, case in enumerate(suite_cases):
            ET.indent(case, level=2)
            yield ("\n    " if n else "") + _xml_chars(ET.tostring(case, encoding="unicode"))
        yield _xml_chars(piece)


def _result_cases(strategy: str, results: Iterable[ScenarioResult]) -> Iterator[ET.Element]:
    """The test cases of ``strategy``'s results."""
    for r in results:
        case = ET.Element("testcase", classname=f"memharness.{strategy}", name=r.scenario,
                          time=f"{r.duration_ms / 1000:.3f}")
        props = ET.SubElement(case, "properties")
        ET.SubElement(props, "property", name="otel.trace_id", value=r.trace_id)
        ET.SubElement(props, "property", name="strategy", value=strategy)
        if r.error:
            ET.SubElement(case, "error", message=r.error_text.splitlines()[0][:500]).text = r.error
        elif r.skipped:
            ET.SubElement(case, "skipped", message=r.skipped[:500])
        elif r.failures:
            ET.SubElement(case, "failure", message=r.failures[0][:500]).text = "\n".join(r.failures)
        yield case


def _gate_cases(gates: Sequence[GateResult]) -> Iterator[ET.Element]:
    for g in gates:
        case = ET.Element("testcase", classname="memharness.gates", name=g.name, time="0.000")
        props = ET.SubElement(case, "properties")
        ET.SubElement(props, "property", name="value", value=_fmt(g.value))
        if g.skipped:
            ET.SubElement(case, "skipped", message=g.detail[:500])
        elif not g.passed:
            ET.SubElement(case, "failure", message=gate_failure(g)[:500]).text = gate_failure(g)
        yield case


def _fmt(value: Any) -> str:
    """As the terminal and the report write a metric: 3 significant digits, a whole number as is, "no data"."""
    if value is None:
        return "no data"
    if isinstance(value, float):
        return f"{value:.3g}" if value != int(value) else str(int(value))
    return str(value)


def summary_markdown(summary: RunSummary, results: Sequence[ScenarioResult] = ()) -> str:
    """A compact Markdown summary for CI step summaries: verdict, metrics, comparisons, baseline deltas and flips,
    failed expectations, gates."""
    strategies = list(summary.strategies)
    seen = _Seen(results, multi=len(strategies) > 1)
    v = verdict_of(summary, seen.statuses) if seen.statuses else None
    word = v.line.split(" — ")[0] if v else "PASSED" if summary.passed else "FAILED"
    lines = [f"## memharness — {word}", ""]
    if v:
        lines += [f"**{v.line}**", ""] + [f"- {d}" for d in v.details] + ([""] if v.details else [])
    if summary.incomplete:  # as the terminal and the report mark it: these metrics are not the whole suite's
        lines += [f"INCOMPLETE: {len(summary.incomplete)} scenario run(s) could not finish (e.g. "
                  f"{summary.incomplete[0]}); every metric below covers a partial suite.", ""]
    for strategy, used in ((summary.meta or {}).get("models") or {}).items():
        weights = str(used.get("weights") or "")
        sha = re.search(r"sha256 ([0-9a-f]{64})", weights)
        lines.append(f"Model `{strategy}`: {used.get('model')} ({used.get('mode')}, {used.get('cassettes')}"
                     + (f"; weights sha256 {sha[1]}" if sha else "") + ")")
        lines.append("")
    lines += ["| metric | " + " | ".join(strategies) + " |", "|---|" + "---:|" * len(strategies)]
    counts = [summary.strategies[s].scenarios for s in strategies]
    lines.append("| scenarios passed | " + " | ".join(c.words for c in counts) + " |")
    for metric in headline():
        lines.append(f"| {metric} | " + " | ".join(_fmt(summary.strategies[s].metric(metric)) for s in strategies) + " |")
    if summary.comparisons:
        lines += ["", "| comparison | delta | 95% CI | p | W/T/L | n | in words |", "|---|---:|---|---:|---|---:|---|"]
        for c in summary.comparisons:
            lines.append(f"| {c.b} − {c.a} {c.metric} | {c.delta:+.3f} | [{c.ci95[0]:+.3f}, {c.ci95[1]:+.3f}] | "
                         f"{p_text(c.p_value)} | {c.wins}/{c.ties}/{c.losses} | {c.n} | "
                         f"{'significant' if c.significant else 'not significant'} |")
    if summary.baseline is not None:
        lines += ["", f"### Against baseline `{summary.baseline.dir}`", "",
                  "| strategy | metric | baseline | now | delta | 95% CI | in words |", "|---|---|---:|---:|---:|---|---|"]
        for c in summary.baseline.comparisons:
            lines.append(f"| {c.b} | {c.metric} | {c.mean_a:.3g} | {c.mean_b:.3g} | {c.delta:+.3g} | "
                         f"[{c.ci95[0]:+.3g}, {c.ci95[1]:+.3g}] | {effect_words(c).split(':')[0]} |")
        if summary.baseline.changed:
            lines += ["", f"{len(summary.baseline.changed)} probe(s) changed against the baseline:", ""]
            lines += [f"- `{p.scenario}` step {p.step} [{p.strategy}] {p.query!r}: F1 {_fmt(p.f1_base)} → {_fmt(p.f1_cand)}"
                      for p in summary.baseline.changed[:30]]
    flipped = flips_among(seen.graded, strategies)
    if flipped:
        lines += ["", f"{len(flipped)} recall probe(s) flip between strategies:", ""]
        lines += [f"- `{f.scenario}` step {f.step} {f.query!r}: {f.a} {'found all' if f.a_ok else 'missed'}, "
                  f"{f.b} {'found all' if f.b_ok else 'missed'}" for f in flipped[:30]]
    bad = seen.bad
    if bad:  # the verdict counts "failed" and "did not finish (error)" apart: so does this list
        errors = any(r.status == "error" for r in bad)
        lines += ["", "### Failed and unfinished scenarios" if errors else "### Failed scenarios", ""]
        for r in bad:
            lines.append(f"- `{r.scenario}` [{r.strategy}]{' did not finish (error)' if r.status == 'error' else ''} "
                         f"({r.path or 'no file'}): " + "; ".join(r.failures or r.error_text.splitlines()[:1]))
    lines += _quality(seen.missed)
    lines += seen.skips.lines()
    lines += ["", "| gate | value | result |", "|---|---:|---|"]
    for g in summary.gates:
        said = g.detail if g.detail.startswith("skipped") else f"skipped: {g.detail}"  # the detail says it (once)
        result = said if g.skipped else "pass" if g.passed else f"**FAIL** {g.detail}"
        lines.append(f"| {g.name} | {_fmt(g.value)} | {result} |")
    return "\n".join(lines) + "\n"


class _Seen:
    """What summary.md needs of every result, gathered in one pass (it was five: a run's results are read back from
    disk one at a time; issue 34): the count by status, the flips' outcomes, the failed and unfinished results, the
    recall steps with quality misses, the skips."""

    def __init__(self, results: Iterable[ScenarioResult], *, multi: bool) -> None:
        self.statuses: Counter[str] = Counter()
        self.graded: dict[tuple[str, int, str], tuple[bool | None, str]] = {}
        self.bad: list[ScenarioResult] = []
        self.missed: list[tuple[ScenarioResult, Probe]] = []
        self.skips = _Skips()
        for r in results:
            self.statuses[r.status] += 1
            if multi:
                self.graded.update(flip_inputs(r))
            if r.status in ("failed", "error"):
                self.bad.append(r)
            self.missed += [(r, p) for p in r.probes if p.quality_misses]
            self.skips.add(r)


def _quality(missed: Sequence[tuple[ScenarioResult, Probe]], most: int = 30) -> list[str]:
    """Recall steps where a real model's choice missed what the step states (counted, not failed: docs/metrics.md)."""
    if not missed:
        return []
    out = ["", f"### Model quality misses ({len(missed)} recall step(s); not failures, see `recall.quality_misses`)", ""]
    out += [f"- `{r.scenario}` [{r.strategy}] step {p.step} {p.query!r}: " + "; ".join(p.quality_misses)
            for r, p in missed[:most]]
    if len(missed) > most:
        out.append(f"- … {len(missed) - most} more in probes.jsonl (`quality_misses`)")
    return out


class _Skips:
    """Skipped scenario runs and skipped steps, grouped by reason (most frequent first), each with one example."""

    def __init__(self) -> None:
        self.runs: Counter[str | None] = Counter()
        self.steps: Counter[str | None] = Counter()
        self.by_run: dict[str | None, str] = {}
        self.by_step: dict[str | None, str] = {}  # a step's example is preferred to a run's, the last one of each kept

    def add(self, r: ScenarioResult) -> None:
        skipped_run = r.status == "skipped"
        if skipped_run:
            self.runs.update([r.skipped] if r.skipped else [])
            self.by_run[r.skipped] = f"{r.scenario} [{r.strategy}]"
        for p in r.probes:
            if p.skipped:
                self.steps.update([] if skipped_run else [p.skipped])
                self.by_step[p.skipped] = f"{r.scenario} [{r.strategy}] step {p.step}"

    def lines(self, most: int = 30) -> list[str]:
        runs, steps = self.runs, self.steps
        example = self.by_run | self.by_step
        out: list[str] = []
        for title, counts in ((f"Skipped scenario runs ({sum(runs.values())})", runs),
                              (f"Skipped steps in runs that ran ({sum(steps.values())})", steps)):
            if counts:
                out += ["", f"### {title}", "", "| reason | count | for example |", "|---|---:|---|"]
                out += [f"| {reason} | {n} | `{example[reason]}` |" for reason, n in counts.most_common(most)]
                if len(counts) > most:
                    out.append(f"| … {len(counts) - most} other reason(s) | "
                               f"{sum(n for _, n in counts.most_common()[most:])} | |")
        return out
