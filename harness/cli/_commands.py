"""``memharness`` commands: each parses nothing itself and calls stage functions. Errors are one line, exit 2."""

from __future__ import annotations

import argparse
import functools
import gc
import os
import platform
import subprocess
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import __version__
from harness.cli._argtypes import check_environment, check_output_dir, unused_model_flags
from harness.cli._conformance import cmd_conformance
from harness.cli._init import cmd_init
from harness.cli._parser import build_parser, command_of
from harness.cli._progress import progress_bar as _progress
from harness.cli._record import cmd_record
from harness.cli._report_cmds import cmd_docs, cmd_history, cmd_report, cmd_schema, cmd_validate, read_run_inputs, trace_url
from harness.cli._sensitivity import cmd_sensitivity
from harness.cli._tools import cmd_bench, cmd_cassettes, cmd_fuzz, cmd_github, cmd_import, cmd_traces, run_fuzz
from harness.errors import HarnessError, SystemFailure, interrupted, one_line, stop_if_asked
from harness.scenario import STRATEGIES, base_strategy, load_all
from harness.scenario._envflag import env_flag

DEFAULT_SCENARIOS = Path("scenarios")

if TYPE_CHECKING:
    from harness.evaluation import RunSummary
    from harness.replay import Mode, ScenarioResult
    from harness.reporting import TraceSpool

# pandas, scipy, OpenTelemetry and jinja2 are imported in the commands that need them: `validate`, `--help` start fast


@functools.cache
def _git_commit() -> str:
    """HEAD of the current checkout, asked of git once per process (spans and summary meta both need it)."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip()


def _meta(extra: Mapping[str, Any]) -> dict[str, Any]:
    from memory_core.prompts import all_prompt_versions
    from memory_core.sqlite.templates import all_prompt_versions as sqlite_prompt_versions

    return {"memharness": __version__, "python": platform.python_version(), "platform": platform.platform(),
            "git_commit": _git_commit(), "bootstrap_seed": 20_260_302,
            "prompt_templates": {**all_prompt_versions(), **sqlite_prompt_versions()}, **extra}


def _evaluate_and_write(out: Path, results: Sequence[ScenarioResult], spans: Sequence[Mapping[str, Any]] | TraceSpool,
                        strategies: Sequence[str], *, gates_path: Path | None, baseline_dir: Path | None,
                        meta: Mapping[str, Any], fuzz: Mapping[str, Any] | None = None,
                        bench: Mapping[str, Any] | None = None, run_id: str | None = None,
                        environ: Mapping[str, str]) -> RunSummary:
    """Evaluation (summary, baseline, gates) then reporting (every output file); ``environ``: main()'s."""
    from harness.evaluation import IncompleteComparison, compare_runs, evaluate_run, load_gates
    from harness.plugins import score_results
    from harness.reporting import preview_history, read_run, record_history, report_chunks, write_run

    results = score_results(results)  # every registered plugin metric, on every probe of its kind
    baseline = refused = None
    if baseline_dir is not None:
        base_summary, base_results, _ = read_run(baseline_dir)
        _same_primary(base_summary.meta, meta, baseline_dir)
        try:
            baseline = compare_runs(base_results, results, base_dir=baseline_dir, base_summary=base_summary,
                                    cand_incomplete=[f"{r.scenario} [{r.strategy}]" for r in results
                                                     if r.status == "error"])
        except IncompleteComparison as exc:
            refused = exc
    gates = load_gates(gates_path) if gates_path else []
    summary = evaluate_run(results, strategies, gates=gates, baseline=baseline,
                           meta={**meta, "gates_file": str(gates_path.resolve()) if gates_path else None,
                                 "baseline_refused": str(refused) if refused else None}, fuzz=fuzz, run_id=run_id,
                           system=_system_name(meta.get("system")))
    skipped: list[str] = []  # what the history read left out: said once, after the append (one warning at most)
    history = preview_history(out, summary, skipped=skipped.append, environ=environ)  # past runs, then this one
    stop_if_asked()  # nothing is written for a run stopped while it was being evaluated
    write_run(out, summary=summary, results=results, spans=spans,
              html=report_chunks(summary, results, spans, bench=bench, history=history), workers=meta.get("jobs", 1))
    record_history(out, summary, skipped=skipped, environ=environ)  # once its directory is whole, the run joins
    if refused is not None:  # the outputs are written (marked incomplete); the comparison is what is refused
        raise refused
    return summary


def _print_outcome(summary: RunSummary, out: Path, results: Sequence[ScenarioResult], echo: Callable[[str], None],
                   environ: Mapping[str, str]) -> int:
    from harness.reporting import closing_table, github_outputs

    for r in results:
        if r.status in ("failed", "error"):
            first = r.error_text.splitlines()[0] if r.error else r.failures[0] if r.failures else ""
            more = f" (+{len(r.failures) - 1} more)" if len(r.failures) > 1 else ""
            echo(f"{r.status.upper()}: {r.scenario} [{r.strategy}] {r.path + ': ' if r.path else ''}{first}{more}")
    if summary.incomplete:
        echo(f"INCOMPLETE: {len(summary.incomplete)} of {len(results)} scenario runs could not finish "
             f"(e.g. {summary.incomplete[0]}); the metrics below cover a PARTIAL SUITE and are not comparable")
    for v in summary.baseline.verdicts if summary.baseline else ():
        echo(f"vs baseline: {v.text}")
    for line in closing_table(summary, results):
        echo(line)
    failed = [g for g in summary.gates if not g.passed]
    for g in failed:
        echo(f"GATE FAILED: {g.name} (value {g.value}) {g.detail}".rstrip())
    for line in github_outputs(summary, results, out, environ):  # main()'s environment, not the process's
        echo(line)
    echo(f"wrote {one_line(str(out))}/report.html")
    if any(r.status == "error" for r in results):
        return 2
    # a failed scenario fails the run even without a gates file (an implicit "scenarios.failed = 0" gate)
    return 1 if failed or any(r.status == "failed" for r in results) else 0


def cmd_run(args: argparse.Namespace) -> int:
    from harness.replay import discard_side, prestart_side

    if not (args.record or args.live) and args.jobs <= 1:
        prestart_side()  # forked while small; it imports litellm only if a scenario needs the adapter
    try:
        return _run(args, args.environ)  # the environment main() was given, as every command reads it
    finally:
        discard_side()
        gc.unfreeze()  # a process that runs again (tests, the plugin) may collect this run's objects after all


def _run(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    from harness.replay import (
        ModelSpec,
        RunConfig,
        load_factory,
        nearest_cassettes,
        needs_cassette_model,
        plan_columns,
        plan_primary,
        plan_proxied,
        read_meta,
        resolve_set,
        run_plan,
        select_shard,
        shipped,
        strategies_for,
        system_list,
        system_plan,
    )
    from harness.reporting import TraceSpool, prepare_report
    from harness.systems import ALL_SYSTEMS

    paths = args.paths or [DEFAULT_SCENARIOS]
    scenarios = load_all(paths, jobs=args.jobs, packed=True)  # parsed on the run's cores; each kept as its pickle
    stop_if_asked()
    if not scenarios:
        raise HarnessError(f"no scenario files under {', '.join(map(str, paths))}")
    if args.tags:
        wanted = {t.strip() for tag in args.tags for t in tag.split(",") if t.strip()}
        scenarios = [s for s in scenarios if wanted & set(s.tags)]
        if not scenarios:
            raise HarnessError(f"no scenario under {', '.join(map(str, paths))} has tag {', '.join(sorted(wanted))}")
    requested = tuple(dict.fromkeys(s.strip() for s in args.strategy.split(",") if s.strip())) if args.strategy else None
    selected = select_shard(scenarios, args.shard)
    strategies = tuple(dict.fromkeys(x for s in selected for x in strategies_for(s, requested)))
    if requested:
        strategies = tuple(x for x in requested if x in strategies) or requested
    suite_dir = paths[0] if paths[0].is_dir() else paths[0].parent
    shelf = args.cassettes or nearest_cassettes(paths[0]) or suite_dir / "cassettes"  # as `record` and the plugin
    cassettes, model = shelf, None
    listed = system_list(args.system)  # `all` or a list: shipped names and your own module:factory, in one report
    every, names, plugins = listed or (False, [], [])
    args.system = None if listed else args.system
    plan = system_plan(args.system, selected, every=every, names=names, plugins=plugins)
    proxied = plan_proxied(plan, ALL_SYSTEMS if every else None)  # a system calling its models through the proxy
    if proxied or any(STRATEGIES[base_strategy(s)].uses_model for s in strategies if base_strategy(s) in STRATEGIES):
        cassettes = resolve_set(shelf)  # a shelf of sets (sets.toml): its default set; only a model run reads it
        mode: Mode = "record" if args.record else "live" if args.live else "replay"
        if proxied and mode != "replay" and not args.api_base:  # else each scenario would end saying it
            raise HarnessError(f"--{mode}: a system behind the model proxy needs --api-base URL, the upstream it calls")
        model = ModelSpec(cassettes, mode, args.model or environ.get("MEMHARNESS_MODEL", "").strip() or None,  # blank: unset
                          args.api_base, args.timeout_scale, shelf=shelf)
        for s in strategies:
            if base_strategy(s) != s:
                model.for_set(s.partition(":")[2]).resolved_model()  # model:SET names a recorded set: fail fast
        if needs_cassette_model(selected, requested, load_factory(args.system)
                                if args.system and shipped(args.system) else None):
            model.resolved_model()  # fail fast, before replaying anything
    elif note := unused_model_flags(args):  # said, never silent (round 13: --model X was taken without a word)
        print(note, file=sys.stderr)
    if any("embedding" in STRATEGIES[s].needs for s in strategies if s in STRATEGIES):
        from memory_core.files.embedding import EmbeddingUnavailable, model_dir

        try:
            model_dir()  # fail fast, with the install hint, before replaying anything
        except EmbeddingUnavailable as exc:
            raise HarnessError(str(exc)) from None
    gates_path = args.gates or (None if args.no_gates or not (suite_dir / "gates.toml").exists() else suite_dir / "gates.toml")
    if gates_path is not None:
        from harness.evaluation import load_gates

        load_gates(gates_path)  # fail fast, before replaying anything
    elif not args.no_gates:  # said, never silent: a single file's folder often has no gates.toml
        print(f"note: no gates file ({suite_dir / 'gates.toml'} does not exist; --gates FILE to use one): only a "
              "failed scenario fails this run", file=sys.stderr)
    bench = read_run_inputs(args)  # --baseline and --benchmark: fail fast, before replaying anything
    run_id = environ.get("MEMHARNESS_RUN_ID") or uuid.uuid4().hex[:12]  # fixed: reproducible trace ids
    env = {**environ, "MEMHARNESS_GIT_COMMIT": environ.get("MEMHARNESS_GIT_COMMIT") or _git_commit()}
    primary = plan_primary(plan, args.system, names)
    if args.system is None:  # every shipped system: columns `strategy` (the reference) and `strategy@system`
        strategies = plan_columns(plan, requested, primary)
    total = sum(len(strategies_for(s, requested)) for _, _, part in plan for s in part)
    if total == 0:
        raise HarnessError(f"no scenario runs with strategy {', '.join(requested or ())}: each one lists other strategies")
    config = RunConfig(requested, model, args.jobs, None, args.system, env, run_id=run_id,
                       suite=suite_dir.resolve().name or "memharness")
    gc.freeze()  # what is loaded now lives for the run: the collector need not walk it again (~7% of a replay)
    advance, stop = _progress(total)
    spool = TraceSpool()  # each scenario's spans go to disk as it finishes: a run's memory does not grow with them
    try:
        # the report template compiles while the run waits for its side process anyway
        run = run_plan(plan, config, primary=primary, progress=advance, idle=prepare_report, traces=spool.add)
    finally:
        stop()
    meta = {"strategies": list(strategies), "scenarios": len(selected), "jobs": args.jobs,
            "shard": f"{args.shard[0]}/{args.shard[1]}" if args.shard else None,
            "model": (model.model or read_meta(cassettes).get("model")) if model else None, "model_mode": model and model.mode,
            "cassettes": str(cassettes) if model else None, "cassette_entries": run.cassette_entries or None,
            "models": _models_used(model, strategies) if model else None,
            "system": args.system or primary, "systems": [name for name, _, _ in plan],
            "trace_url": trace_url(environ)}
    fuzz_report = run_fuzz(system=args.system, max_examples=args.fuzz_examples, seed=0, regressions=args.out /
                           "regressions", database=None) if args.fuzz_examples > 0 else None
    try:
        summary = _evaluate_and_write(args.out, run.results, spool, strategies, gates_path=gates_path,
                                      baseline_dir=args.baseline, meta=_meta(meta), fuzz=fuzz_report, bench=bench,
                                      run_id=run_id, environ=environ)
        code = _print_outcome(summary, args.out, run.results, print, environ)
    finally:
        spool.close()
        run.results.close()
    return code if code or fuzz_report is None or fuzz_report["passed"] else 1


def cmd_compare(args: argparse.Namespace) -> int:
    from harness.evaluation import Gate, compare_runs, evaluate, load_gates, p_text
    from harness.reporting import read_run

    base_summary, base, _ = read_run(args.base)
    cand_summary, cand, _ = read_run(args.cand)
    _same_primary(base_summary.meta, cand_summary.meta, args.base)
    gates_path = args.gates or _suite_gates(cand_summary.meta)  # checked before anything is printed
    gates = [g for g in load_gates(gates_path) if g.vs == "baseline"] if gates_path else []
    if args.max_drop is not None:
        gates.append(Gate("recall.f1", max_drop=args.max_drop, vs="baseline"))
    info = compare_runs(base, cand, base_dir=args.base, base_summary=base_summary,
                        cand_incomplete=cand_summary.incomplete)
    for v in info.verdicts:
        print(v.text)
    for f in info.flips:
        print(f"FLIP {f.scenario} [{f.strategy}]" + (f" step {f.step} ({f.kind})" if f.step is not None else "")
              + f": passed in the baseline, {f.now} now" + (f" — {f.detail}" if f.detail else ""))
    for c in info.comparisons:
        print(f"  {c.b:10} {c.metric:27} base {c.mean_a:.3f} cand {c.mean_b:.3f} delta {c.delta:+.4f} "
              f"95% CI [{c.ci95[0]:+.4f}, {c.ci95[1]:+.4f}] {p_text(c.p_value, prefix='p')} "
              f"({'significant' if c.significant else 'not significant'}) W/T/L {c.wins}/{c.ties}/{c.losses} n={c.n}")
    for d in info.suite:
        if d.delta:
            print(f"  {d.strategy:10} {d.metric:27} base {d.base:g} cand {d.cand:g}")
    print(f"{len(info.changed)} changed probe(s), most harmful first")
    for row in info.changed:
        print(f"  {row.scenario} step {row.step} [{row.strategy}] {row.query!r}: F1 {row.f1_base} -> {row.f1_cand}; "
              f"{list(row.selected_base)} -> {list(row.selected_cand)}")
    failed = False
    for g in evaluate(gates, cand_summary.strategies, baseline=info, system=_system_name(cand_summary.meta.get("system"))):
        if not g.skipped:
            print(f"gate {g.name}: {'pass' if g.passed else 'FAIL'} {g.detail}".rstrip())
        failed |= not g.passed
    return 1 if failed else 0


def _system_name(spec: Any) -> str:
    """``sqlite:seed`` → ``sqlite``; a built-in name as is; anything else (a module:factory) as given."""
    from harness.systems import SYSTEMS

    text = str(spec or "reference")
    name = text.split(":", 1)[0]
    return name if name in SYSTEMS else text


def _same_primary(base: Mapping[str, Any], cand: Mapping[str, Any], base_dir: Path) -> None:
    """Refuse two runs whose first systems differ: a bare label (``heuristic``) is the run's first system."""
    a, b = _system_name(base.get("system")), _system_name(cand.get("system"))
    if a != b:
        variant = any(str(m.get("system") or "reference") != n for m, n in ((base, a), (cand, b)))  # runs alone
        both = "" if variant else f" (or run both in one: --system {a},{b} names {b}'s columns strategy@{b})"
        raise HarnessError(f"{base_dir}: the baseline's columns are system {a}, the candidate's {b}; compare runs of "
                           f"the same --system{both}")


def _suite_gates(meta: Mapping[str, Any]) -> Path | None:
    """The gates file the candidate run used, when it still exists."""
    path = meta.get("gates_file")
    return Path(path) if path and Path(path).is_file() else None


def cmd_merge(args: argparse.Namespace) -> int:
    from harness.reporting import read_run, result_line

    results: list[ScenarioResult] = []
    spans: list[dict[str, Any]] = []
    strategies: list[str] = []
    seen: dict[tuple[str, str], Path] = {}
    systems: set[str] = set()
    for shard in args.shards:
        summary, res, sp = read_run(shard)
        systems.add(str(summary.meta.get("system") or "reference"))
        for r in res:
            if (r.scenario, r.strategy) in seen:  # overlapping shards would count every metric twice
                raise HarnessError(f"{result_line(shard, r.scenario, r.strategy)}: scenario: {r.scenario} [{r.strategy}] "
                                   f"is also in {result_line(seen[(r.scenario, r.strategy)], r.scenario, r.strategy)}"
                                   "; shards must not overlap")
            seen[(r.scenario, r.strategy)] = shard
        results += res
        spans += sp
        strategies += [s for s in summary.strategies if s not in strategies]
    if len(systems) > 1:
        raise HarnessError(f"the shards ran different systems ({', '.join(sorted(systems))}); merge runs of one system")
    results.sort(key=lambda r: (r.scenario, strategies.index(r.strategy)))
    merged = _evaluate_and_write(args.out, results, spans, strategies, gates_path=args.gates, baseline_dir=None,
                                 meta=_meta({"merged_from": [str(s) for s in args.shards], "system": systems.pop()}),
                                 environ=args.environ)
    return _print_outcome(merged, args.out, results, print, args.environ)


def _models_used(model: Any, strategies: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per model strategy column: which model answered, from which set, with which weights (cassette-meta.json)."""
    from harness.replay import read_meta
    from harness.scenario import base_strategy

    out = {}
    for column in strategies:
        strategy = column.split("@")[0]
        if base_strategy(strategy) != "model" or strategy in out:
            continue
        spec = model.for_set(strategy.partition(":")[2] if strategy != "model" else None)
        meta = read_meta(spec.cassettes)
        out[strategy] = {"model": spec.model or meta.get("model"), "cassettes": str(spec.cassettes),
                         "weights": meta.get("weights"), "mode": spec.mode}
    return out


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Entry point: the exit code (0 ok, 1 gate/regression failure, 2 usage or scenario error). Every failure is one
    printable line on stderr and exit 2; ``MEMHARNESS_DEBUG=1`` re-raises for the traceback."""
    env = os.environ if environ is None else environ
    try:
        args = build_parser(command_of(sys.argv[1:] if argv is None else argv)).parse_args(argv)
        check_environment(env)
        args.environ = env  # every command reads the environment main() was given (tests pass their own)
        check_output_dir(getattr(args, "out", None), "--out")
        if args.command in ("run", "compare", "merge", "report", "validate"):  # --plugin, env, entry points
            from harness.plugins import load_plugins

            load_plugins(getattr(args, "plugins", None) or (), environ=dict(env))
        if args.command == "record":
            return cmd_record(args, env, main)
        commands: dict[str, Callable[[argparse.Namespace], int]] = {
            "run": cmd_run, "validate": cmd_validate, "report": cmd_report, "compare": cmd_compare, "merge": cmd_merge,
            "fuzz": cmd_fuzz, "bench": cmd_bench, "import": cmd_import, "cassettes": cmd_cassettes,
            "traces": cmd_traces, "sensitivity": cmd_sensitivity, "conformance": cmd_conformance,
            "history": cmd_history, "schema": cmd_schema, "docs": cmd_docs, "init": cmd_init, "github": cmd_github,
        }
        return commands[args.command](args)
    except HarnessError as exc:  # the system under test failing before anything could run is its failure, exit 1
        print(f"memharness: {one_line(str(exc))}", file=sys.stderr)
        return 1 if isinstance(exc, SystemFailure) else 2
    except KeyboardInterrupt:
        return interrupted()
    except OSError as exc:  # an output or input file the OS refused: name it, one line
        if env_flag(env, "MEMHARNESS_DEBUG"):
            raise
        where = f"{one_line(str(exc.filename))}: " if exc.filename is not None else ""
        print(f"memharness: {where}{one_line(exc.strerror or str(exc))}", file=sys.stderr)
        return 2
    except MemoryError:  # a memory limit (ulimit -v, a container): the machine's, not a bug of ours
        print("memharness: out of memory (a memory limit is set lower than this command needs)", file=sys.stderr)
        return 2
    except Exception as exc:  # the CLI boundary: one line, no traceback unless asked for
        if env_flag(env, "MEMHARNESS_DEBUG"):
            raise
        print(f"memharness: internal error: {type(exc).__name__}: {one_line(str(exc))} "
              "(set MEMHARNESS_DEBUG=1 for the traceback)", file=sys.stderr)
        return 2
