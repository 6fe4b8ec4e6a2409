"""Rows against their own trace: what ``traces.jsonl`` recorded of each scenario run, checked as a run is read back.

The order check (``order_problem``) and the counts (``probe_kinds``, ``summary.json``) catch rows moved or lost, but
not rows relabelled: a results row holding another scenario's fields under its own name (description, path,
duration, verdict: swapped since the run), or probes moved from one scenario to another with their names changed,
read as written and were shown under the wrong scenario with the wrong numbers (round 19); so were two columns of
one scenario traded (round 20). Each row's trace says whose it is: the ``scenario`` span names the scenario
(``test.case.name``) and the strategy (``memory.scenario.strategy``), and each recall's span its step
(``memory.step``) and the length of its query (``memory.recall.query.length``).

A run with no traces (``OTEL_SDK_DISABLED``, a scenario whose process died: no ``trace_id``) has nothing to compare.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.errors import HarnessError, one_line
from harness.replay import Probe


def _attributes(span: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for a in span.get("attributes", []):
        value = a.get("value") if isinstance(a, dict) else None
        if isinstance(value, dict) and value:
            out[str(a.get("key"))] = next(iter(value.values()))
    return out


def _spans(traces: Iterable[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each trace's spans' attributes (``traceId`` → list), with the span's name as ``""``."""
    out: dict[str, list[dict[str, Any]]] = {}
    for line in traces:
        for rs in line.get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                for span in ss.get("spans", []):
                    out.setdefault(span["traceId"], []).append({**_attributes(span), "": span.get("name")})
    return out


def _whose(root: Mapping[str, Any]) -> str:
    """``<scenario> [<column>]`` of a trace's ``scenario`` span, as a row names its run: the primary system's columns
    are bare strategy names (the span names no system), another system's ``<strategy>@<system>``
    (``memory.system``)."""
    column = str(root.get("memory.scenario.strategy", "?")) + (f"@{root['memory.system']}" if root.get("memory.system")
                                                                else "")
    return f"{one_line(str(root.get('test.case.name')))[:60]} [{one_line(column)[:60]}]"


def check_trace_rows(run_dir: Path, rows: Sequence[tuple[int, Mapping[str, Any]]],
                     probes: Mapping[tuple[str, str], Sequence[Probe]],
                     probe_lines: Mapping[tuple[str, str, int, str], int], traces: Iterable[Mapping[str, Any]],
                     *, trusted: bool = True) -> None:
    """Raise ``HarnessError`` (``<file>:<line>: <field>: …``) for a results row whose trace is another scenario's, or a
    recall probe whose row's trace ran no recall, or (``trusted``: a shipped system's run, whose recall events count
    the query's characters) a different query at that step. A plug-in system's run (``--system module:attr``) is
    judged on what the harness itself records: its events' query length is the plug-in's to fill, or not (a
    ``report`` of the own-system example refused its own run, as "a query of None character(s)")."""
    spans = _spans(traces)
    for n, row in rows:
        trace = spans.get(str(row.get("trace_id")), [])
        roots = [s for s in trace if isinstance(s.get("test.case.name"), str)]
        strategy, _, system = str(row["strategy"]).partition("@")
        if roots and (row["scenario"] not in {s["test.case.name"] for s in roots}
                      or strategy not in {s.get("memory.scenario.strategy") for s in roots}
                      or (system or None) not in {s.get("memory.system") for s in roots}):  # a column's own, as run
            field = "scenario" if row["scenario"] not in {s["test.case.name"] for s in roots} else "strategy"
            raise HarnessError(f"{run_dir / 'results.jsonl'}:{n}: {field}: {one_line(row['scenario'])[:60]} "
                               f"[{one_line(row['strategy'])[:60]}], but its trace {row['trace_id']} is a run of "
                               f"{_whose(roots[0])} (rows or fields swapped since the run?)")
        for probe in probes.get((row["scenario"], row["strategy"]), ()):
            at = [s for s in trace if str(s.get("memory.step")) == str(probe.step)]
            recalls = [s for s in at if s.get("memory.operation") == "recall"]
            if probe.kind != "recall" or not at:
                continue
            lengths = {str(s["memory.recall.query.length"]) for s in recalls if "memory.recall.query.length" in s}
            if recalls and not (trusted and lengths):
                continue  # the length is the system's own word (its event): a plug-in may send none, or count otherwise
            if not recalls or str(len(probe.query)) not in lengths:
                where = run_dir / "probes.jsonl"
                n_probe = probe_lines[(probe.scenario, probe.strategy, probe.step, probe.kind)]
                ran = f"a query of {'/'.join(sorted(lengths))} character(s)" if recalls else "no recall"
                raise HarnessError(f"{where}:{n_probe}: query: a query of {len(probe.query)} character(s) at step "
                                   f"{probe.step} of {one_line(probe.scenario)[:60]} [{one_line(probe.strategy)[:60]}], "
                                   f"but that run's trace has {ran} there (probes moved between scenarios since the "
                                   "run?)")
