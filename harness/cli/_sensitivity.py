"""``memharness sensitivity``: spec mutants (and optionally cosmic-ray mutants) against the scenario suite."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.errors import HarnessError, one_line
from harness.scenario import load_all

DEFAULT_SCENARIOS = Path("scenarios")


def cmd_sensitivity(args: argparse.Namespace) -> int:
    """Exit 0 when the kill rate reaches ``--min-kill-rate``, 1 below it, 2 for usage errors."""
    from harness.tools._equivalent import Triage, default_equivalents, load_triage, split_equivalent
    from harness.tools._generated import generated_mutants
    from harness.tools._mutants import default_catalogue, load_catalogue, resolve_target, select
    from harness.tools._sensitivity import Oracle, exit_code, format_lines, run_sensitivity, write_report

    paths = [p.resolve() for p in (args.paths or [DEFAULT_SCENARIOS])]
    for p in paths:
        if not p.exists():
            raise HarnessError(f"{p}: no such scenario file or directory")
    if args.generated < 0:
        raise HarnessError("--generated: expected N >= 0")
    if args.timeout is not None and args.timeout <= 0:
        raise HarnessError("--timeout: expected seconds > 0")
    gates = args.gates.resolve() if args.gates else None
    if gates is not None:  # a malformed gates file is a usage error, said before the suite and the catalogue load
        from harness.evaluation import load_gates  # (round 13: ~4 s of CPU, 25 s on a loaded box, before the line)

        load_gates(gates)
    if not load_all(paths):
        raise HarnessError(f"no scenario files under {', '.join(map(str, paths))}")
    target = resolve_target(args.target)
    catalogue = None if args.no_catalogue else args.catalogue or (
        default_catalogue() if target.name == "memory_core" else None)
    mutants = load_catalogue(catalogue, target) if catalogue is not None else []
    modules = tuple(m.strip() for item in args.modules or [] for m in item.split(",") if m.strip())
    equivalents_file = args.equivalents or (default_equivalents() if target.name == "memory_core" else None)
    triage = load_triage(equivalents_file) if equivalents_file else Triage()
    mutants += generated_mutants(target, args.generated, seed=args.seed, modules=modules, outside=triage.outside)
    only = [n.strip() for item in args.only or [] for n in item.split(",") if n.strip()] or None
    if not mutants:
        raise HarnessError(f"no mutants: give --catalogue FILE or --generated N for --target {target.name}")
    mutants = select(mutants, only=only, subset=args.subset)
    mutants, equivalent = split_equivalent(mutants, list(triage.equivalents),
                                           lambda rel: target.module_path(rel).read_text(encoding="utf-8"))
    if not mutants:
        raise HarnessError("no mutants left to run: every selected mutant is listed as equivalent")
    tags = tuple(t.strip() for tag in args.tags or [] for t in tag.split(",") if t.strip())
    oracle = Oracle(tuple(paths), target, args.strategy, args.system, tags, gates)
    report = run_sensitivity(
        mutants, oracle, jobs=args.jobs, timeout_s=args.timeout, min_kill_rate=args.min_kill_rate,
        progress=lambda line: print(line, file=sys.stderr, flush=True), equivalent=equivalent,
        meta={"catalogue": str(catalogue) if catalogue else None, "generated": args.generated, "seed": args.seed,
              "modules": list(modules), "equivalents": str(equivalents_file) if equivalents_file else None,
              "outside": [{"module": o.module, "reason": o.reason, **({"within": list(o.within)} if o.within else {}),
                           **({"when": o.when} if o.when is not None else {})} for o in triage.outside],
              "subset": args.subset, "only": only, "system": args.system or "reference",
              "tags": list(tags), "gates": str(gates) if gates else None},
    )
    write_report(args.out, report)
    for line in format_lines(report):
        print(line)
    print(f"wrote {one_line(str(args.out))}/sensitivity.json and sensitivity.md"
          + (" and coverage.md (rule -> the scenarios that kill it)" if any(m.kind == "spec" for m in mutants) else ""))
    return exit_code(report)
