"""Write a run directory (DESIGN §4): summary.json, probes.jsonl, results.jsonl, traces.jsonl, junit.xml,
summary.md and report.html; and read one back (for ``report``, ``compare`` and shard merges)."""

from __future__ import annotations

import json
import math
import os
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.replay import ScenarioResult

SUMMARY_SCHEMA = "memharness.summary/1"


def _clean(value: Any) -> Any:
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def atomic_write(path: Path, text: str) -> None:
    """Write via a temp file and ``os.replace``: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def jsonl(rows: Iterable[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(_clean(dict(r)), ensure_ascii=False, sort_keys=True) + "\n" for r in rows)


def result_row(r: ScenarioResult) -> dict[str, Any]:
    row = asdict(r)
    row.pop("probes")
    row["status"] = r.status
    return row


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
                              time=f"{sum(r.duration_ms for r in rows) / 1000:.3f}")
        for r in rows:
            case = ET.SubElement(suite, "testcase", classname=f"memharness.{strategy}", name=r.scenario,
                                 time=f"{r.duration_ms / 1000:.3f}")
            props = ET.SubElement(case, "properties")
            ET.SubElement(props, "property", name="otel.trace_id", value=r.trace_id)
            ET.SubElement(props, "property", name="strategy", value=strategy)
            if r.error:
                ET.SubElement(case, "error", message=r.error.splitlines()[0][:500]).text = r.error
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


HEADLINE = ("recall.precision", "recall.recall", "recall.f1", "recall.mrr", "recall.ndcg", "recall.abstention_accuracy",
            "dedupe.residual_duplicates", "dedupe.retention", "index.within_limits", "latency.recall_ms.p95",
            "llm.calls", "llm.replayed", "llm.tokens.input", "llm.tokens.output", "llm.cost_usd")


def summary_markdown(summary: Mapping[str, Any]) -> str:
    """A compact Markdown summary for CI step summaries."""
    strategies = list(summary["strategies"])
    lines = [f"## memharness — {'PASSED' if summary['passed'] else 'FAILED'}", ""]
    lines += ["| metric | " + " | ".join(strategies) + " |", "|---|" + "---:|" * len(strategies)]
    sc = [summary["strategies"][s]["scenarios"] for s in strategies]
    lines.append("| scenarios passed | " + " | ".join(f"{c['passed']}/{c['total']}" for c in sc) + " |")
    for metric in HEADLINE:
        lines.append(f"| {metric} | " + " | ".join(_fmt(summary["strategies"][s]["metrics"].get(metric))
                                                   for s in strategies) + " |")
    if summary.get("comparisons"):
        lines += ["", "| comparison | delta | 95% CI | p | W/T/L | n |", "|---|---:|---|---:|---|---:|"]
        for c in summary["comparisons"]:
            lines.append(f"| {c['b']} − {c['a']} {c['metric']} | {c['delta']:+.3f} | [{c['ci95'][0]:+.3f}, "
                         f"{c['ci95'][1]:+.3f}] | {c['p_value']:.3g} | {c['wins']}/{c['ties']}/{c['losses']} | {c['n']} |")
    lines += ["", "| gate | value | result |", "|---|---:|---|"]
    for g in summary.get("gates", []):
        lines.append(f"| {g['name']} | {_fmt(g['value'])} | {'pass' if g['passed'] else '**FAIL** ' + g.get('detail', '')} |")
    return "\n".join(lines) + "\n"


def write_run(out: Path, *, summary: Mapping[str, Any], results: Sequence[ScenarioResult],
              spans: Sequence[Mapping[str, Any]], html: str) -> None:
    """Write every output file of a run directory."""
    out.mkdir(parents=True, exist_ok=True)
    probes = [p for r in results for p in r.probes]
    atomic_write(out / "summary.json", json.dumps(_clean(dict(summary)), indent=2, ensure_ascii=False) + "\n")
    atomic_write(out / "probes.jsonl", jsonl(probes))
    atomic_write(out / "results.jsonl", jsonl(result_row(r) for r in results))
    atomic_write(out / "traces.jsonl", jsonl(spans))
    atomic_write(out / "junit.xml", junit_xml(results))
    atomic_write(out / "summary.md", summary_markdown(summary))
    atomic_write(out / "report.html", html)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        raise HarnessError(f"{path}: missing (is this a memharness run directory?)")
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise HarnessError(f"{path}:{n}: invalid JSON ({exc.msg})") from None
    return rows


def read_run(run_dir: Path) -> tuple[dict[str, Any], list[ScenarioResult], list[dict[str, Any]]]:
    """(summary, results with their probes, spans) of a run directory."""
    try:
        summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HarnessError(f"{run_dir}/summary.json: missing (is this a memharness run directory?)") from None
    except json.JSONDecodeError as exc:
        raise HarnessError(f"{run_dir}/summary.json:{exc.lineno}: invalid JSON ({exc.msg})") from None
    probes = read_jsonl(run_dir / "probes.jsonl")
    by_key: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for p in probes:
        by_key.setdefault((p["scenario"], p["strategy"]), []).append(p)
    results = []
    for row in read_jsonl(run_dir / "results.jsonl"):
        row.pop("status", None)
        row["probes"] = by_key.get((row["scenario"], row["strategy"]), [])
        row["tags"] = tuple(row.get("tags", ()))
        row["prompt_versions"] = tuple(row.get("prompt_versions", ()))
        results.append(ScenarioResult(**row))
    spans = read_jsonl(run_dir / "traces.jsonl") if (run_dir / "traces.jsonl").exists() else []
    return summary, results, spans
