"""A run directory read back agrees with itself (round 15): what one file says of another's rows is checked, so a
directory edited, cut, or put together from pieces of two runs is refused in one located line instead of read.

- ``summary.json``'s numbers the rows determine — each column's metric block (``summarize``, the writer's own
  computation, on the rows read back), ``incomplete``, ``complete`` and ``passed`` against its gates — are the
  rows' (before: a metric edited, or a summary copied from another run of the same scenarios, was read silently
  and gated on).
- Each ``results.jsonl`` row's ``probe_kinds`` (how many probes of each kind it had when written) is what
  ``probes.jsonl`` holds of it (before: a lost ``check`` or ``dream`` row was read silently; recall rows were
  counted by the summary).
- Each ``results.jsonl`` row's ``trace_id`` has its spans in ``traces.jsonl`` and every trace there is a row's, of
  this run (its resource's ``memharness.run_id``) — before: a trace line lost, or one from another run, was read
  silently."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from harness.errors import HarnessError, one_line
from harness.evaluation import RunSummary
from harness.replay import ScenarioResult

_ROUNDED_SUMS: Final = ("harness.system_ms", "harness.overhead_ms")
"""Sums of per-row times the rows hold rounded to 3 decimals (the summary summed them unrounded)."""


def _shown(value: Any) -> str:
    return one_line(json.dumps(value, ensure_ascii=False))[:60]


def _differs(metric: str, written: float, rows: float, count: int) -> bool:
    if metric in _ROUNDED_SUMS:
        slack = 0.0005 * count + 0.002
    elif metric.startswith("latency."):  # a quantile of times written rounded to 3 decimals
        slack = 0.0006
    else:
        slack = 1e-9 * max(1.0, abs(rows))
    return not math.isclose(written, rows, rel_tol=0.0, abs_tol=slack)


def summary_problem(summary: RunSummary, results: Sequence[ScenarioResult]) -> str | None:
    """``field: problem`` for the first field of ``summary`` the rows read back determine and disagree with."""
    from harness.evaluation import summarize

    errors = sorted(f"{r.scenario} [{r.strategy}]" for r in results if r.status == "error")
    if sorted(summary.incomplete) != errors:
        return (f"incomplete: {_shown(list(summary.incomplete))}, but results.jsonl has {len(errors)} row(s) that "
                f"could not finish{': ' + _shown(errors) if errors else ''} (a row changed since the run?)")
    gates = all(g.passed for g in summary.gates)
    if summary.passed != (gates and not errors):
        why = "a gate failed" if not gates else "the run is incomplete" if errors else "every gate passed"
        return f"passed: {_shown(summary.passed)}, but {why} (a field changed since the run?)"
    blocks, comparisons = summarize(results, list(summary.strategies))
    for column, block in summary.strategies.items():
        count = sum(1 for r in results if r.strategy == column)
        for metric, rows in blocks[column].metrics.items():
            written = block.metrics.get(metric)
            if metric not in block.metrics and rows is None:
                continue  # a metric this version adds that the run had no data for
            if (written is None) != (rows is None) or (
                    written is not None and rows is not None and _differs(metric, written, rows, count)):
                got = "missing" if metric not in block.metrics else _shown(written)
                return (f"strategies.{column}.metrics.{metric}: {got}, but the rows of results.jsonl and probes.jsonl "
                        f"give {_shown(rows)} (a row or the summary changed since the run?)")
    if len(summary.comparisons) != len(comparisons):
        return (f"comparisons: {len(summary.comparisons)} written, but the rows give {len(comparisons)} (a row or the "
                "summary changed since the run?)")
    for i, (mine, theirs) in enumerate(zip(summary.comparisons, comparisons, strict=True)):
        stated, given = mine.to_dict(), theirs.to_dict()
        for key, value in given.items():
            if not _same(stated[key], value):
                return (f"comparisons[{i}].{key}: {_shown(stated[key])}, but the rows give {_shown(value)} (a row "
                        "or the summary changed since the run?)")
    return _gates_problem(summary, blocks, comparisons, results)


def _gates_problem(summary: RunSummary, blocks: Mapping[str, Any], comparisons: Sequence[Any],
                   results: Sequence[ScenarioResult]) -> str | None:
    """``gates[i].field: problem`` for the first gate whose ``value``, ``skipped`` or ``passed`` is not what its
    bounds give on the rows (round 17: a failed gate edited to pass, with ``passed``, was read and posted)."""
    from harness.evaluation._gates import recheck

    primary = summary.meta.get("system")
    for i, written in enumerate(summary.gates):
        given = recheck(written, blocks, comparisons, primary if isinstance(primary, str) else "reference")
        if given is None:
            continue
        count = sum(1 for r in results if r.strategy == written.gate.strategy)
        value_differs = (written.value is None) != (given.value is None) or (
            written.value is not None and given.value is not None
            and _differs(written.gate.metric, written.value, given.value, count))
        if written.skipped != given.skipped or value_differs:
            key, stated, rows = ("skipped", written.skipped, given.skipped) if written.skipped != given.skipped \
                else ("value", written.value, given.value)
            return (f"gates[{i}].{key}: {_shown(stated)}, but the rows give {_shown(rows)} for {written.name} (a row "
                    "or the summary changed since the run?)")
        passes = given.passed if written.value is None or written.gate.max_drop is not None \
            else written.gate.holds(written.value)
        if written.passed != passes and written.passed != given.passed:  # either way: a value on the bound
            return (f"gates[{i}].passed: {_shown(written.passed)}, but its value {_shown(written.value)} "
                    f"{'passes' if passes else 'fails'} {written.name} (a field changed since the run?)")
    return None


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and not isinstance(a, bool):
        return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return bool(a == b and type(a) is type(b)) or (
        isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool)
        and not isinstance(b, bool) and a == b)


def order_problem(rows: Sequence[tuple[int, Mapping[str, Any]]],
                  probe_lines: Mapping[tuple[str, str, int, str], int]) -> tuple[int, str] | None:
    """(line of ``probes.jsonl``, ``field: problem``) when its rows are not in the order the writer writes them:
    each result's probes together, results in ``results.jsonl``'s order, a result's steps in order (round 15: two
    results rows swapped were read silently and the report listed them swapped)."""
    index = {(row["scenario"], row["strategy"]): i for i, (_, row) in enumerate(rows)}
    last: tuple[int, int] = (-1, -1)
    last_line = 0
    for (scenario, strategy, step, _), n in probe_lines.items():
        here = (index.get((scenario, strategy), -1), step)
        if here < last:
            return n, (f"step: {one_line(scenario)[:80]} [{one_line(strategy)[:40]}] step {step} comes after line "
                       f"{last_line}, but the writer writes probes in the order of results.jsonl and steps in order "
                       "(lines reordered since the run?)")
        last, last_line = here, n
    return None


def probe_kinds_problem(row: Mapping[str, Any], probes: Sequence[Any]) -> str | None:
    """``probe_kinds…: problem`` when a ``results.jsonl`` row's count of its probes by kind (written since round 15;
    older rows have none: not checked) is not a mapping of kind to count, or is not what ``probes.jsonl`` holds;
    ``passed: problem`` when the row's verdict is not its failures' (the writer passes a scenario exactly when it
    has no failure and no error: a row edited to pass with failures, or to fail with none, was read as written)."""
    failing = bool(row.get("failures")) or row.get("error") is not None
    if row["passed"] == failing:
        why = f"it has {len(row.get('failures') or ())} failure(s)" + (" and an error" if row.get("error") is not None else "")
        return f"passed: {_shown(row['passed'])}, but {why} (a field changed since the run?)"
    if row["passed"] and (wrong := next((p for p in probes if not p.passed), None)) is not None:
        return (f"passed: true, but probes.jsonl has its step {wrong.step} ({wrong.kind}) failed (a failing probe fails "
                "its scenario: a field changed since the run?)")
    if "probe_kinds" not in row:
        return None
    written = row["probe_kinds"]
    if not isinstance(written, dict) or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 63
            for k, v in written.items()):
        return f"probe_kinds: expected a mapping of probe kind to count, got {_shown(written)}"
    held = Counter(p.kind for p in probes)
    for kind in sorted(set(written) | set(held)):
        if written.get(kind, 0) != held[kind]:
            return (f"probe_kinds.{kind}: {written.get(kind, 0)}, but probes.jsonl has {held[kind]} {kind} row(s) of "
                    f"{row['scenario']} [{row['strategy']}] (a row lost or added since the run?)")
    return None


def _run_id(resource_spans: Mapping[str, Any]) -> str | None:
    resource = resource_spans.get("resource")
    for attribute in resource.get("attributes", []) if isinstance(resource, dict) else []:
        if isinstance(attribute, dict) and attribute.get("key") == "memharness.run_id":
            value = attribute.get("value")
            return value.get("stringValue") if isinstance(value, dict) else None
    return None


def check_traces(run_dir: Path, summary: RunSummary, rows: Sequence[tuple[int, Mapping[str, Any]]],
                 traces: Sequence[tuple[int, Mapping[str, Any]]] | None) -> list[dict[str, Any]]:
    """Raise ``HarnessError`` (``<file>:<line>: <field>: <problem>``) when a results row's trace has no span in
    ``traces.jsonl``, a trace there is no row's or another run's, or two rows name one trace. ``traces``: the
    numbered lines (checked by ``checked_lines`` already), None when the file is absent (refused when a row names
    a trace). A row without a trace (``""``: a scenario whose process died; 32 zeros: OTel's invalid id, written
    when ``OTEL_SDK_DISABLED`` is set) expects none. A merged run (``meta.merged_from``) holds its shards' run ids:
    those are not compared.

    Returns the lines in the order of their rows in ``results.jsonl`` (a normalisation: the order of
    ``traces.jsonl``'s lines carries nothing, and a merge writes them so)."""
    results_path, traces_path = run_dir / "results.jsonl", run_dir / "traces.jsonl"
    owner: dict[str, int] = {}
    for n, row in rows:
        trace = row.get("trace_id")
        if isinstance(trace, str) and trace.strip("0"):  # all zeros: OTel's invalid id, no trace (SDK disabled)
            if trace in owner:
                raise HarnessError(f"{results_path}:{n}: trace_id: {one_line(trace)[:40]} is also the trace of line "
                                   f"{owner[trace]} (a field changed since the run?)")
            owner[trace] = n
    if traces is None:
        if owner:
            raise HarnessError(f"{traces_path}: missing, but {results_path}:{next(iter(owner.values()))} names trace "
                               f"{next(iter(owner))} (is this a whole memharness run directory?)")
        return []
    merged = isinstance(summary.meta.get("merged_from"), list)
    seen: set[str] = set()
    for n, line in traces:
        for i, rs in enumerate(line.get("resourceSpans", [])):
            run_id = _run_id(rs)
            if not merged and run_id is not None and run_id != summary.run_id:
                raise HarnessError(f"{traces_path}:{n}: resourceSpans[{i}].resource.memharness.run_id: "
                                   f"{_shown(run_id)}, but the run is {_shown(summary.run_id)} (a line of another run?)")
            for j, ss in enumerate(rs.get("scopeSpans", [])):
                for k, span in enumerate(ss.get("spans", [])):
                    trace = span["traceId"]
                    if trace not in owner:
                        raise HarnessError(f"{traces_path}:{n}: resourceSpans[{i}].scopeSpans[{j}].spans[{k}].traceId: "
                                           f"trace {trace} is no row's of {results_path} (a line of another run?)")
                    seen.add(trace)
    for trace, n in owner.items():
        if trace not in seen:
            raise HarnessError(f"{results_path}:{n}: trace_id: trace {trace} has no span in {traces_path} (a line "
                               "lost since the run?)")
    order = {n: min((owner[s["traceId"]] for rs in line.get("resourceSpans", []) for ss in rs.get("scopeSpans", [])
                     for s in ss.get("spans", [])), default=0) for n, line in traces}
    return [dict(line) for n, line in sorted(traces, key=lambda item: order[item[0]])]
