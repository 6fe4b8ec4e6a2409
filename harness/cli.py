"""``memharness``: run, validate, report, compare, merge, cassettes. Errors are one line and exit 2."""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import __version__
from harness.cli_tools import cmd_bench, cmd_cassettes, cmd_fuzz, cmd_import, run_fuzz
from harness.errors import HarnessError
from harness.gates import Gate, evaluate, load_gates
from harness.scenario_load import STRATEGIES as KNOWN_STRATEGIES
from harness.scenario_load import load_all

if TYPE_CHECKING:
    from harness.replay import ScenarioResult

# pandas, scipy, OpenTelemetry and jinja2 are imported inside the commands that need them, so `memharness
# validate` and `--help` start fast.

DEFAULT_SCENARIOS = Path("scenarios")
DEFAULT_OUT = Path("reports/latest")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise HarnessError(f"usage: {message}")


def _shard(text: str) -> tuple[int, int]:
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected I/N like 1/2, got {text!r}") from None
    if not 1 <= i <= n:
        raise argparse.ArgumentTypeError(f"expected 1 <= I <= N, got {text!r}")
    return i, n


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="memharness", description="Replay memory scenarios, measure recall/dedupe/index quality, gate CI.")
    p.add_argument("--version", action="version", version=f"memharness {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="replay scenarios and write a run directory")
    run.add_argument("paths", nargs="*", type=Path, help="scenario files or directories (default: scenarios/)")
    run.add_argument("--strategy", default=None,
                     help="comma-separated: " + ", ".join(KNOWN_STRATEGIES) + " (default: each scenario's own "
                          "'strategies', else heuristic)")
    run.add_argument("--model", help="litellm model string for the model strategy (default: the cassette's model)")
    run.add_argument("--api-base", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8765/v1")
    run.add_argument("--cassettes", type=Path, help="cassette directory (default: <first path>/cassettes)")
    mode = run.add_mutually_exclusive_group()
    mode.add_argument("--record", action="store_true", help="call the real model for unrecorded calls and store them")
    mode.add_argument("--live", action="store_true", help="call the real model every time; store nothing")
    run.add_argument("--timeout-scale", type=float, default=1.0, help="multiply the spec's model timeouts (CPU models)")
    run.add_argument("--out", type=Path, default=DEFAULT_OUT)
    run.add_argument("--gates", type=Path, help="gates TOML (default: <first path>/gates.toml when present)")
    run.add_argument("--no-gates", action="store_true", help="ignore the default gates file")
    run.add_argument("--baseline", type=Path, help="a previous run directory to compare against")
    run.add_argument("--jobs", type=int, default=1)
    run.add_argument("--shard", type=_shard)
    run.add_argument("--system", help="package.module:factory of your own MemorySystem (default: the reference core)")
    run.add_argument("--benchmark", type=Path, help="a benchmark.json from `memharness bench` to include in the report")
    run.add_argument("--fuzz-examples", type=int, default=0,
                     help="also run the property suite with this many examples and add it to the report")
    val = sub.add_parser("validate", help="check scenario files; exit 0 or 2")
    val.add_argument("paths", nargs="+", type=Path)
    rep = sub.add_parser("report", help="re-render report.html from a run directory")
    rep.add_argument("run_dir", type=Path)
    rep.add_argument("-o", "--output", type=Path)
    cmp_ = sub.add_parser("compare", help="paired deltas between two run directories")
    cmp_.add_argument("base", type=Path)
    cmp_.add_argument("cand", type=Path)
    cmp_.add_argument("--gates", type=Path, help="gates TOML; its max_drop gates with vs = \"baseline\" decide the exit code")
    cmp_.add_argument("--max-drop", type=float, default=None, help="fail when any recall.f1 CI lies below -MAX_DROP")
    mer = sub.add_parser("merge", help="merge shard run directories into one")
    mer.add_argument("out", type=Path)
    mer.add_argument("shards", nargs="+", type=Path)
    mer.add_argument("--gates", type=Path)
    fz = sub.add_parser("fuzz", help="run the memory property suite; write shrunk failures as regression scenarios")
    fz.add_argument("--profile", choices=("dev", "ci"), default="ci",
                    help="dev: 50 examples, random; ci: 200 examples, derandomized (default)")
    fz.add_argument("--max-examples", type=int, help="override the profile's example budget")
    fz.add_argument("--seed", type=int, default=0)
    fz.add_argument("--system", help="package.module:factory of the system under test (default: the reference core)")
    fz.add_argument("--property", action="append", dest="properties", help="run only this property (repeatable)")
    fz.add_argument("--regressions", type=Path, default=Path("scenarios/regressions"))
    fz.add_argument("--database", type=Path, help="Hypothesis example database directory (default: none)")
    fz.add_argument("--min-precision", type=float, default=0.0)
    fz.add_argument("--min-recall", type=float, default=1.0)
    fz.add_argument("--out", type=Path, help="also write fuzz.json here")
    bench = sub.add_parser("bench", help="benchmarks")
    bench_sub = bench.add_subparsers(dest="bench_command", required=True, parser_class=_Parser)
    loc = bench_sub.add_parser("locomo", help="LoCoMo turn-level evidence retrieval for every offline strategy")
    loc.add_argument("path", type=Path, help="locomo10.json (e.g. ../shared/datasets/locomo/locomo10.json)")
    loc.add_argument("--strategy", default="heuristic,bm25,embedding,hybrid")
    loc.add_argument("--mode", choices=("turns", "observations"), default="turns")
    loc.add_argument("--out", type=Path, default=Path("reports/locomo"))
    imp = sub.add_parser("import", help="import a dataset as scenarios")
    imp_sub = imp.add_subparsers(dest="import_command", required=True, parser_class=_Parser)
    iloc = imp_sub.add_parser("locomo", help="LoCoMo conversations as scenario YAML")
    iloc.add_argument("path", type=Path)
    iloc.add_argument("--out", type=Path, required=True)
    iloc.add_argument("--mode", choices=("turns", "observations"), default="turns")
    cas = sub.add_parser("cassettes", help="cassette tools")
    cas_sub = cas.add_subparsers(dest="cassette_command", required=True, parser_class=_Parser)
    st = cas_sub.add_parser("status", help="list entries whose prompt version no longer matches the templates")
    st.add_argument("directory", type=Path)
    return p


def _git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip()


def _meta(extra: Mapping[str, Any]) -> dict[str, Any]:
    from memory_core.prompts import all_prompt_versions

    return {"memharness": __version__, "python": platform.python_version(), "platform": platform.platform(),
            "git_commit": _git_commit(), "bootstrap_seed": 20_260_302, "prompt_templates": all_prompt_versions(),
            **extra}


def _baseline(base_dir: Path, results: Sequence[ScenarioResult]) -> dict[str, Any]:
    from harness.outputs import read_run
    from harness.summary import changed_probes, paired, probe_frame

    _, base_results, _ = read_run(base_dir)
    fa = probe_frame([p for r in base_results for p in r.probes])
    fb = probe_frame([p for r in results for p in r.probes])
    comps = []
    for strategy in sorted(set(fb["strategy"]) & set(fa["strategy"])) if not fa.empty and not fb.empty else []:
        comps += [c.as_dict() for c in paired(fa[fa["strategy"] == strategy], fb[fb["strategy"] == strategy],
                                               strategy, strategy)]
    return {"dir": str(base_dir), "comparisons": comps, "changed": changed_probes(fa, fb) if not fa.empty else []}


def finish_run(out: Path, results: Sequence[ScenarioResult], spans: Sequence[Mapping[str, Any]],
               strategies: Sequence[str], *, gates_path: Path | None, baseline_dir: Path | None,
               meta: Mapping[str, Any], fuzz: Mapping[str, Any] | None = None,
               bench: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Summarise, evaluate gates, write every output; returns the summary."""
    from harness.outputs import write_run
    from harness.report import render_report
    from harness.summary import summarize

    body = summarize(results, strategies)
    baseline = _baseline(baseline_dir, results) if baseline_dir else None
    gates = load_gates(gates_path) if gates_path else []
    gate_results = evaluate(gates, body, baseline_comparisons=baseline["comparisons"] if baseline else ())
    summary: dict[str, Any] = {
        "schema": "memharness.summary/1", "run_id": uuid.uuid4().hex[:12], "created_at": datetime.now(UTC).isoformat(),
        **body, "gates": [g.as_dict() for g in gate_results],
        "passed": all(g.passed for g in gate_results) and not any(r.status == "error" for r in results),
        "meta": {**meta, "gates_file": str(gates_path) if gates_path else None},
    }
    if baseline:
        summary["baseline"] = baseline
    if fuzz is not None:
        summary["fuzz"] = fuzz
    write_run(out, summary=summary, results=results, spans=spans,
              html=render_report(summary, results, spans, fuzz=fuzz, bench=bench))
    return summary


def _print_outcome(summary: Mapping[str, Any], out: Path, results: Sequence[ScenarioResult],
                   echo: Callable[[str], None]) -> int:
    for r in results:
        if r.status != "passed":
            echo(f"{r.status.upper()}: {r.scenario} [{r.strategy}]: {r.error or '; '.join(r.failures)}")
    for strategy, block in summary["strategies"].items():
        m, c = block["metrics"], block["scenarios"]
        echo(f"{strategy}: {c['passed']}/{c['total']} scenarios passed; recall P={m.get('recall.precision')} "
             f"R={m.get('recall.recall')} F1={m.get('recall.f1')} MRR={m.get('recall.mrr')}; "
             f"residual duplicates {m.get('dedupe.residual_duplicates')}; retention {m.get('dedupe.retention')}")
    failed = [g for g in summary["gates"] if not g["passed"]]
    for g in failed:
        echo(f"GATE FAILED: {g['name']} (value {g['value']}) {g.get('detail', '')}".rstrip())
    echo(f"wrote {out}/report.html")
    if any(r.status == "error" for r in results):
        return 2
    # a failed scenario fails the run even without a gates file (an implicit "scenarios.failed = 0" gate)
    return 1 if failed or any(r.status == "failed" for r in results) else 0


def _progress(total: int) -> tuple[Callable[[ScenarioResult], None], Callable[[], None]]:
    if sys.stderr.isatty():
        from rich.progress import Progress

        bar = Progress(transient=True)
        task = bar.add_task("replaying", total=total)
        bar.start()
        return (lambda r: bar.advance(task)), bar.stop
    done = [0]

    def line(r: ScenarioResult) -> None:
        done[0] += 1
        print(f"[{done[0]}/{total}] {r.status:6} {r.scenario} [{r.strategy}]", file=sys.stderr)

    return line, lambda: None


def cmd_run(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    from harness.cassette import Mode, read_meta
    from harness.runner import ModelSpec, RunConfig, needs_cassette_model, run_suite, select_shard, strategies_for

    paths = args.paths or [DEFAULT_SCENARIOS]
    scenarios = load_all(paths)
    if not scenarios:
        raise HarnessError(f"no scenario files under {', '.join(map(str, paths))}")
    requested = tuple(s.strip() for s in args.strategy.split(",") if s.strip()) if args.strategy else None
    selected = select_shard(scenarios, args.shard)
    strategies = tuple(dict.fromkeys(x for s in selected for x in strategies_for(s, requested)))
    if requested:
        strategies = tuple(x for x in requested if x in strategies) or requested
    suite_dir = paths[0] if paths[0].is_dir() else paths[0].parent
    cassettes = args.cassettes or suite_dir / "cassettes"
    model = None
    if "model" in strategies:
        mode: Mode = "record" if args.record else "live" if args.live else "replay"
        model = ModelSpec(cassettes, mode, args.model or environ.get("MEMHARNESS_MODEL"), args.api_base, args.timeout_scale)
        if needs_cassette_model(selected, requested):
            model.resolved_model()  # fail fast, before replaying anything
    if {"embedding", "hybrid"} & set(strategies):
        from memory_core.embedding import EmbeddingUnavailable, model_dir

        try:
            model_dir()  # fail fast, with the install hint, before replaying anything
        except EmbeddingUnavailable as exc:
            raise HarnessError(str(exc)) from None
    gates_path = args.gates or (None if args.no_gates or not (suite_dir / "gates.toml").exists() else suite_dir / "gates.toml")
    if gates_path is not None:
        load_gates(gates_path)  # fail fast, before replaying anything
    config = RunConfig(requested, model, args.jobs, args.shard, args.system, dict(environ))
    n = len(selected)
    total = sum(len(strategies_for(s, requested)) for s in selected)
    if total == 0:
        raise HarnessError(f"no scenario runs with strategy {', '.join(requested or ())}: each one lists other strategies")
    advance, stop = _progress(total)
    try:
        run = run_suite(scenarios, config, progress=advance)
    finally:
        stop()
    meta = {"strategies": list(strategies), "scenarios": n, "jobs": args.jobs,
            "shard": f"{args.shard[0]}/{args.shard[1]}" if args.shard else None,
            "model": (model.model or read_meta(cassettes).get("model")) if model else None,
            "model_mode": model.mode if model else None,
            "cassettes": str(cassettes) if model else None, "cassette_entries": run.cassette_entries or None}
    fuzz_report = None
    if args.fuzz_examples > 0:
        fuzz_report = run_fuzz(system=args.system, max_examples=args.fuzz_examples, seed=0,
                               regressions=args.out / "regressions", database=None)
    bench = None
    if args.benchmark:
        try:
            bench = json.loads(args.benchmark.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise HarnessError(f"{args.benchmark}: cannot read the benchmark file ({exc})") from None
    summary = finish_run(args.out, run.results, run.spans, strategies, gates_path=gates_path,
                         baseline_dir=args.baseline, meta=_meta(meta), fuzz=fuzz_report, bench=bench)
    code = _print_outcome(summary, args.out, run.results, print)
    return code if code or fuzz_report is None or fuzz_report["passed"] else 1


def cmd_validate(args: argparse.Namespace) -> int:
    scenarios = load_all(args.paths)
    print(f"{len(scenarios)} scenario(s) valid")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from harness.outputs import read_run
    from harness.report import render_report

    summary, results, spans = read_run(args.run_dir)
    target = args.output or args.run_dir / "report.html"
    from harness.outputs import atomic_write

    atomic_write(target, render_report(summary, results, spans, fuzz=summary.get("fuzz")))
    print(f"wrote {target}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from harness.outputs import read_run

    _, cand, _ = read_run(args.cand)
    info = _baseline(args.base, cand)
    for c in info["comparisons"]:
        print(f"{c['b']:10} {c['metric']:17} base {c['mean_a']:.3f} cand {c['mean_b']:.3f} delta {c['delta']:+.4f} "
              f"95% CI [{c['ci95'][0]:+.4f}, {c['ci95'][1]:+.4f}] p={c['p_value']:.3g} W/T/L "
              f"{c['wins']}/{c['ties']}/{c['losses']} McNemar p={c['mcnemar_p']:.3g} n={c['n']}")
    print(f"{len(info['changed'])} changed probe(s)")
    for row in info["changed"]:
        print(f"  {row['scenario']} step {row['step']} [{row['strategy']}] {row['query']!r}: "
              f"{row['selected_base']} -> {row['selected_cand']} (F1 {row['f1_base']} -> {row['f1_cand']})")
    gates = [g for g in load_gates(args.gates) if g.max_drop is not None and g.vs == "baseline"] if args.gates else []
    if args.max_drop is not None:
        gates.append(Gate("recall.f1", max_drop=args.max_drop, vs="baseline"))
    # the gates' own rule: a regression fails only when the whole 95% CI lies below -max_drop
    strategies: dict[str, Any] = {c["b"]: {} for c in info["comparisons"]}
    failed = False
    for g in evaluate(gates, {"strategies": strategies, "comparisons": []}, baseline_comparisons=info["comparisons"]):
        print(f"gate {g.gate.label}: {'pass' if g.passed else 'FAIL'} {g.detail}")
        failed |= not g.passed
    return 1 if failed else 0


def cmd_merge(args: argparse.Namespace) -> int:
    from harness.outputs import read_run

    results, spans, strategies = [], [], []
    metas = []
    for shard in args.shards:
        summary, res, sp = read_run(shard)
        results += res
        spans += sp
        metas.append(summary.get("meta", {}))
        strategies += [s for s in summary["strategies"] if s not in strategies]
    results.sort(key=lambda r: (r.scenario, strategies.index(r.strategy)))
    summary = finish_run(args.out, results, spans, strategies, gates_path=args.gates, baseline_dir=None,
                         meta=_meta({"merged_from": [str(s) for s in args.shards]}))
    return _print_outcome(summary, args.out, results, print)


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Entry point: returns the exit code (0 ok, 1 gate/regression failure, 2 usage or scenario error)."""
    env = os.environ if environ is None else environ
    try:
        args = build_parser().parse_args(argv)
        if args.command == "run":
            return cmd_run(args, env)
        commands: dict[str, Callable[[argparse.Namespace], int]] = {
            "validate": cmd_validate, "report": cmd_report, "compare": cmd_compare, "merge": cmd_merge,
            "fuzz": cmd_fuzz, "bench": cmd_bench, "import": cmd_import, "cassettes": cmd_cassettes,
        }
        return commands[args.command](args)
    except HarnessError as exc:
        print(f"memharness: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("memharness: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the CLI boundary: one line, no traceback unless asked for
        if env.get("MEMHARNESS_DEBUG"):
            raise
        print(f"memharness: internal error: {type(exc).__name__}: {exc} (set MEMHARNESS_DEBUG=1 for the traceback)",
              file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
