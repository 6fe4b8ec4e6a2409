"""What a run prints at the end: a closing table (3 significant digits, comparisons in words) and, under GitHub
Actions, ``::error`` annotations pointing at the scenario line of each failed expectation plus the Markdown
summary appended to ``$GITHUB_STEP_SUMMARY``."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from harness.errors import HarnessError
from harness.evaluation import RunSummary, p_text
from harness.plugins import metric_names
from harness.replay import ScenarioResult
from harness.reporting._targets import append_text
from harness.reporting._text import summary_markdown
from harness.reporting._view import CARD_METRICS, Annotation, failure_annotations, gate_failure, sig3, verdict

TABLE_METRICS: Final = (*CARD_METRICS, "recall.abstention_accuracy", "dedupe.residual_duplicates", "llm.calls",
                         "recall.fallbacks", "recall.quality_misses")


def closing_table(summary: RunSummary, results: Sequence[ScenarioResult]) -> list[str]:
    """Plain-text lines: the verdict, a metric × strategy table, then every comparison in words."""
    strategies = list(summary.strategies)
    v = verdict(summary, results)
    rows = [("scenarios passed", [b.scenarios.words for b in summary.strategies.values()])]
    rows += [(m, [sig3(summary.strategies[s].metric(m)) for s in strategies]) for m in (*TABLE_METRICS, *metric_names())]
    width = max(len(r[0]) for r in rows)
    cols = [max(len(s), *(len(r[1][i]) for r in rows)) for i, s in enumerate(strategies)]
    lines = [v.line, "", " " * width + "  " + "  ".join(s.rjust(c) for s, c in zip(strategies, cols, strict=True))]
    for name, values in rows:
        lines.append(name.ljust(width) + "  " + "  ".join(x.rjust(c) for x, c in zip(values, cols, strict=True)))
    comps = [(f"{c.b} − {c.a}", c) for c in summary.comparisons]
    comps += [(f"{c.b} vs baseline", c) for c in (summary.baseline.comparisons if summary.baseline else ())]
    if comps:
        lines.append("")
    for label, c in comps:
        lines.append(f"{label} {c.metric}: {c.delta:+.3g} (95% CI {c.ci95[0]:+.3g} to {c.ci95[1]:+.3g}, "
                     f"{p_text(c.p_value, prefix='p')}) {'significant' if c.significant else 'not significant'}")
    return lines


def _relative(path: str, cwd: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(cwd.resolve()))
    except ValueError:
        return path


def github_outputs(summary: RunSummary, results: Sequence[ScenarioResult], out: Path,
                   environ: Mapping[str, str], *, cwd: Path | None = None) -> list[str]:
    """Annotation lines when ``GITHUB_ACTIONS=true``; appends the Markdown summary to ``$GITHUB_STEP_SUMMARY`` when
    set (a write error is a one-line warning, never a failed run)."""
    lines: list[str] = []
    if environ.get("GITHUB_ACTIONS") == "true":
        base = cwd or Path.cwd()
        for a in failure_annotations(results):
            lines.append(Annotation(_relative(a.file, base), a.line, a.scenario, a.strategy, a.message).github())
        for g in summary.gates:  # a failed gate (a baseline regression included) is an error too, never only exit 1
            if not g.passed and not g.skipped:
                msg = gate_failure(g).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
                lines.append(f"::error title=memharness gate {g.name}::{msg}")
    target = environ.get("GITHUB_STEP_SUMMARY")
    if target:
        try:
            append_text(Path(target), summary_markdown(summary, results) + f"\nReport: `{out}/report.html`\n\n")
        except (OSError, HarnessError) as exc:  # a FIFO no one reads included (round 11: it blocked for ever)
            print(f"memharness: warning: cannot append to GITHUB_STEP_SUMMARY {target} ({exc})", file=sys.stderr)
    return lines
