"""Text outputs of a run: JUnit XML (one testcase per scenario × strategy) and the Markdown summary."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any, Final

from harness.evaluation import RunSummary
from harness.replay import ScenarioResult

HEADLINE: Final = ("recall.precision", "recall.recall", "recall.f1", "recall.mrr", "recall.ndcg",
                   "recall.abstention_accuracy", "dedupe.residual_duplicates", "dedupe.retention", "index.within_limits",
                   "latency.recall_ms.p95", "llm.calls", "llm.replayed", "llm.tokens.input", "llm.tokens.output",
                   "llm.cost_usd")


def junit_xml(results: Sequence[ScenarioResult]) -> str:
    """One testcase per scenario × strategy; failure messages name the step; the trace id is a property."""
    suites = ET.Element("testsuites", name="memharness")
    by_strategy: dict[str, list[ScenarioResult]] = {}
    for r in results:
        by_strategy.setdefault(r.strategy, []).append(r)
    for strategy, rows in by_strategy.items():
        suite = ET.SubElement(suites, "testsuite", name=f"memharness.{strategy}", tests=str(len(rows)),
                              failures=str(sum(r.status == "failed" for r in rows)),
                              errors=str(sum(r.status == "error" for r in rows)),
                              skipped=str(sum(r.status == "skipped" for r in rows)),
                              time=f"{sum(r.duration_ms for r in rows) / 1000:.3f}")
        for r in rows:
            case = ET.SubElement(suite, "testcase", classname=f"memharness.{strategy}", name=r.scenario,
                                 time=f"{r.duration_ms / 1000:.3f}")
            props = ET.SubElement(case, "properties")
            ET.SubElement(props, "property", name="otel.trace_id", value=r.trace_id)
            ET.SubElement(props, "property", name="strategy", value=strategy)
            if r.error:
                ET.SubElement(case, "error", message=r.error.splitlines()[0][:500]).text = r.error
            elif r.skipped:
                ET.SubElement(case, "skipped", message=r.skipped[:500])
            elif r.failures:
                ET.SubElement(case, "failure", message=r.failures[0][:500]).text = "\n".join(r.failures)
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))
    return str(value)


def summary_markdown(summary: RunSummary) -> str:
    """A compact Markdown summary for CI step summaries."""
    strategies = list(summary.strategies)
    lines = [f"## memharness — {summary.verdict.upper()}", ""]
    if summary.incomplete:
        lines += [f"**INCOMPLETE**: {len(summary.incomplete)} scenario run(s) could not finish "
                  f"(e.g. {summary.incomplete[0]}); the metrics below cover a partial suite.", ""]
    for v in summary.baseline.verdicts if summary.baseline else ():
        lines.append(f"- vs baseline: {v.text}")
    for f in summary.baseline.flips if summary.baseline else ():
        lines.append(f"- FLIP {f.scenario} [{f.strategy}]" + (f" step {f.step}" if f.step is not None else "")
                     + f": passed in the baseline, {f.now} now")
    if summary.baseline:
        lines.append("")
    lines += ["| metric | " + " | ".join(strategies) + " |", "|---|" + "---:|" * len(strategies)]
    counts = [summary.strategies[s].scenarios for s in strategies]
    lines.append("| scenarios passed | " + " | ".join(f"{c.passed}/{c.total}" for c in counts) + " |")
    for metric in HEADLINE:
        lines.append(f"| {metric} | " + " | ".join(_fmt(summary.strategies[s].metric(metric)) for s in strategies) + " |")
    if summary.comparisons:
        lines += ["", "| comparison | delta | 95% CI | p | W/T/L | n |", "|---|---:|---|---:|---|---:|"]
        for c in summary.comparisons:
            lines.append(f"| {c.b} − {c.a} {c.metric} | {c.delta:+.3f} | [{c.ci95[0]:+.3f}, {c.ci95[1]:+.3f}] | "
                         f"{c.p_value:.3g} | {c.wins}/{c.ties}/{c.losses} | {c.n} |")
    lines += ["", "| gate | value | result |", "|---|---:|---|"]
    for g in summary.gates:
        lines.append(f"| {g.name} | {_fmt(g.value)} | {'pass' if g.passed else '**FAIL** ' + g.detail} |")
    return "\n".join(lines) + "\n"
