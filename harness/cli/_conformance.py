"""``memharness conformance --system module:factory``: what a memory system gets right, capability by capability.

For the portable core and for every capability the system declares, the methods the capability needs must exist
(else **missing method**), and a few shipped scenarios that exercise it (those written for the system's design, or
portable, whose every need the system declares) are replayed: all pass → **ok**, else **wrong** with the first
difference (scenario, step, message). A case exercises more than its capability, so a break in one place can
show in the rows of the capabilities that lean on it too; the first difference says where to look. Capabilities
the system does not declare are listed with how many shipped checks will be skipped for it. Exit 1 on any wrong or
missing method. It takes seconds, not a suite run.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError

METHODS: dict[str, tuple[str, ...]] = {
    "": ("seed", "finish_seeding", "add_turns", "extract", "dream", "recall", "forget", "documents"),
    "file_index": ("index_text", "loaded_index"),
    "stray_files": ("stray_files",),
    "locks": ("plant_lock", "lock_held"),
    "extract_queue": ("hold_extractions", "release_extractions"),
    "system_checks": ("system_check",),
    "state_files": ("plant_state",),
    "io_faults": ("inject_fault",),
}
"""The methods each capability's checks call (docs/system-protocol.md); the core row is every system's."""


MODEL_PATH = "~model"
"""The row of the portable scenarios that run the model strategy (scripted replies or the default cassette set)."""


@dataclass
class Row:
    capability: str
    verdict: str
    """``ok`` | ``wrong`` | ``missing method`` | ``untested`` | ``not declared``."""
    detail: str = ""
    cases: int = 0
    ran: int = 0
    """Cases that ran and passed (a skipped case proves nothing)."""


def conformance(spec: str, paths: Sequence[Path], per_capability: int = 4, notes: list[str] | None = None,
                cassettes: Path | None = None) -> list[Row]:
    """The table rows for system ``spec`` over the scenarios under ``paths`` (what else to say goes to ``notes``);
    ``cassettes``: the cassette set or shelf to replay from (default: the first path's ``cassettes/``)."""
    from harness.errors import SystemFailure
    from harness.replay import ModelSpec, plugin_traits, resolve_set, step_needs, target_problem
    from harness.replay._cassette import UNRECORDED
    from harness.scenario import load_all

    try:  # in a child process: the plug-in's import and construction never run in this one
        traits = plugin_traits(spec, methods=[m for methods in METHODS.values() for m in methods], instance=True)
    except SystemFailure as exc:
        return [Row("core (the portable operations its cases call)", "wrong", str(exc))]
    name, design, strategies, declared, methods = (traits.name, traits.design, traits.strategies, traits.capabilities,
                                                    traits.methods)

    class _Declared:  # what target_problem reads
        pass

    me = _Declared()
    me.name, me.design = name, design  # type: ignore[attr-defined]
    given = load_all(list(paths))
    suite = [s for s in given if target_problem(s, me) is None]
    if notes is not None and len(suite) < len(given):
        designs = sorted({s.design for s in given if s.design and target_problem(s, me) is not None})
        notes.append(f"{len(given) - len(suite)} of the {len(given)} scenarios given are written for another design or "
                     f"system ({', '.join(designs) or 'by name'}) and were left out: this system declares "
                     f"{f'design {design}' if design else 'no design'}; a system implementing one of those "
                     "specifications says so with a `design` attribute (docs/system-protocol.md#name-and-design)")
    roots = [p if p.is_dir() else p.parent for p in paths]
    shelf = next((r for r in roots if (r / "cassettes").is_dir()), roots[0])  # the first path with a cassette shelf
    model = ModelSpec(resolve_set(cassettes or shelf / "cassettes"))
    needs = {s.id: {c.value for step in s.steps for c, _ in step_needs(step)}
             | ({"raw_files"} if any(m.raw is not None for m in s.memories) else set()) for s in suite}
    uses_model = {s.id: "model" in (s.strategies or ("heuristic",)) for s in suite}
    plan: list[tuple[str, str, list[Any]]] = []  # (capability, label, cases); verdicts come after every replay
    rows: dict[str, Row] = {}
    for capability in ("", MODEL_PATH, *sorted({c for n in needs.values() for c in n} | declared)):
        label = {"": "core (the portable operations its cases call)",
                 MODEL_PATH: "model path (strategy model)"}.get(capability, capability)
        if capability in ("", MODEL_PATH):
            cases = [s for s in suite if not needs[s.id] and uses_model[s.id] == (capability == MODEL_PATH)]
        else:
            cases = [s for s in suite if capability in needs[s.id] and needs[s.id] <= declared]
        if capability == MODEL_PATH and strategies is not None and "model" not in strategies:
            rows[capability] = Row(label, "not declared", f"its strategies are {', '.join(sorted(strategies))}")
        elif capability not in ("", MODEL_PATH) and capability not in declared:
            skipped = sum(1 for s in suite if capability in needs[s.id])
            rows[capability] = Row(label, "not declared", f"{skipped} scenario(s) given skip steps for it")
        elif lacking := [m for m in METHODS.get(capability, ()) if m not in methods]:
            rows[capability] = Row(label, "missing method", ", ".join(lacking))
        elif not (picked := _spread(cases, per_capability)):
            rows[capability] = Row(label, "untested", "no scenario given exercises it for this design")
        else:
            rows[capability] = Row(label, "ok", cases=len(picked))
            plan.append((capability, label, picked))
    runs = {(s.id, "model" if capability == MODEL_PATH else (s.strategies or ("heuristic",))[0]): s
            for capability, _, picked in plan for s in picked}
    results = _replay_cases(spec, model, runs)
    for capability, _, picked in plan:
        row = rows[capability]
        for scenario in picked:
            strategy = "model" if capability == MODEL_PATH else (scenario.strategies or ("heuristic",))[0]
            result = results.get((scenario.id, strategy))
            if result is None:
                continue
            if result.status == "passed":
                row.ran += 1
            if result.status not in ("failed", "error"):
                continue
            if result.status == "error" and UNRECORDED in (result.error or ""):  # the cassettes' gap,
                if row.verdict == "ok":  # not the system's: as a run says INCOMPLETE, never wrong
                    row.verdict, row.detail = "incomplete", f"{scenario.id}: {result.error_text.splitlines()[0]}"
                continue
            if row.verdict in ("ok", "incomplete"):  # the first difference, where it is
                row.verdict, row.detail = "wrong", f"{scenario.id}: {(result.failures or (result.error_text,))[0]}"
    for row in rows.values():  # a capability whose every case was skipped was never exercised: not ok
        if row.verdict == "ok" and row.cases and not row.ran:
            row.verdict, row.detail = "untested", "every case was skipped (a strategy or capability it lacks)"
    return list(rows.values())


def _replay_cases(spec: str, model: Any, runs: dict[tuple[str, str], Any]) -> dict[tuple[str, str], Any]:
    """The result of each (scenario id, strategy): a shipped system replays in this process, a plug-in in child
    processes the harness can kill (``harness.replay.run_isolated``: a hang, an exit or a crash fails that case)."""
    from harness.replay import RunConfig, Worker, needs_cassette_model, shipped
    from harness.replay._isolated import run_isolated

    results: dict[tuple[str, str], Any] = {}
    if shipped(spec):
        worker = Worker(RunConfig(None, model, system=spec))
        try:
            for (sid, strategy), scenario in runs.items():
                results[(sid, strategy)] = worker.run_one(scenario, strategy)
        finally:
            worker.shutdown()
        return results
    for strategy in dict.fromkeys(s for _, s in runs):
        cases = [scenario for (_, s), scenario in runs.items() if s == strategy]
        if needs_cassette_model(cases, (strategy,)):  # as in this process: no model is a usage error, exit 2,
            model.for_set(strategy.partition(":")[2]).resolved_model()  # never the system's failure in a child
        for i, (out, _) in run_isolated(cases, RunConfig((strategy,), model, system=spec), 1):
            results.update(((cases[i].id, r.strategy), r) for r in out)
    return results


def _spread(cases: Sequence[Any], n: int) -> list[Any]:
    """``n`` cases spread over the list (different areas of the suite, not the first folder only)."""
    if len(cases) <= n:
        return list(cases)
    step = len(cases) / n
    return [cases[int(i * step)] for i in range(n)]


def cmd_conformance(args: argparse.Namespace) -> int:
    if not args.system:
        raise HarnessError("conformance: pass --system NAME or package.module:factory")
    notes: list[str] = []
    rows = conformance(args.system, args.paths or [Path("scenarios")], per_capability=args.cases, notes=notes,
                       cassettes=args.cassettes)
    width = max(len(r.capability) for r in rows)
    print(f"conformance of {args.system}:")
    for r in rows:
        cases = f" ({r.cases} case(s))" if r.cases else ""
        print(f"  {r.capability.ljust(width)}  {r.verdict}{cases}" + (f": {r.detail}" if r.detail else ""))
    bad = [r for r in rows if r.verdict in ("wrong", "missing method")]
    untested = [r for r in rows if r.verdict == "untested"]
    where = ", ".join(str(p) for p in args.paths or [Path("scenarios")])
    if bad:
        print(f"{len(bad)} capability(ies) wrong or missing a method")
    elif untested:  # not "ok": nothing checked them
        print(f"nothing wrong in what was tested; {len(untested)} of {len(rows)} untested: no scenario in {where} "
              "exercises them" + ("" if notes else " (point it at a suite that does, e.g. the harness's own scenarios/)"))
    else:
        print("every declared capability: ok")
    for note in notes:
        print(f"note: {note}")
    if incomplete := [r for r in rows if r.verdict == "incomplete"]:
        raise HarnessError(f"conformance of {args.system}: {len(incomplete)} capability(ies) could not be checked: "
                           "unrecorded model calls (record them with memharness run --record --api-base URL, or name "
                           "the set with --cassettes DIR)")
    return 1 if bad else 0
