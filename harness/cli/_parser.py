"""The argument parser of ``memharness`` (the CLI reference in ``docs/cli.md`` is generated from it)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from harness import __version__
from harness.cli._argtypes import GIVEN, StoreOnce, bounded, file_path, http_url, names, owner_repo, path, text_line
from harness.cli._report_cmds import add_report_commands
from harness.errors import HarnessError

STRATEGY_HELP = ("comma-separated: heuristic, model, bm25, embedding, hybrid, model:SET (a cassette set) or a plugin's "
                 "ranker (default: each scenario's own 'strategies', else heuristic)")
"""Written out, not read from the registry: ``--help`` imports nothing heavy (tests check it names every built-in)."""

DEFAULT_OUT = "reports/latest"
"""Path defaults are text: argparse converts a text default with the argument's type (``--help`` imports no pathlib)."""


def _unused(*args: Any, **kwargs: Any) -> None:
    """``add_argument`` of a subcommand this parse does not use."""


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in (None, "store"):  # an option given twice with two values is refused (round 15b)
            self.register("action", name, StoreOnce)

    def error(self, message: str) -> None:  # type: ignore[override]
        raise HarnessError(f"usage: {message}")

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        parsed, rest = super().parse_known_args(args, namespace)
        if hasattr(parsed, GIVEN):  # StoreOnce's bookkeeping, never a command's argument
            delattr(parsed, GIVEN)
        return parsed, rest


def _shard(text: str) -> tuple[int, int]:
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected I/N like 1/2, got {text!r}") from None
    if not 1 <= i <= n:
        raise argparse.ArgumentTypeError(f"expected 1 <= I <= N, got {text!r}")
    return i, n


_rate = bounded(float, lambda v: 0.0 <= v <= 1.0, "a number between 0 and 1")
_positive = bounded(int, lambda v: v >= 1, "a positive integer")
_drop = bounded(float, lambda v: 0.0 <= v <= 1.0, "a drop from 0 to 1 (recall.f1 is a number from 0 to 1)")
_floor = bounded(float, lambda v: 0.0 <= v <= 1.0, "a floor from 0 to 1 (precision and recall are fractions)")
_seconds = bounded(float, lambda v: 0 < v < 1e7, "a number of seconds above 0")
_count = bounded(int, lambda v: 0 <= v <= 1_000_000, "a whole number from 0 to 1000000")
"""Example budgets and limits."""
_scale = bounded(float, lambda v: 0 < v < 1e6, "a number above 0")
"""Timeout scales (also refuses nan and inf)."""


def _add_sensitivity(sub: argparse._SubParsersAction[_Parser]) -> None:
    sens = sub.add_parser("sensitivity", help="mutation analysis: which injected faults the scenario suite catches")
    sens.add_argument("paths", nargs="*", type=path, help="scenario files or directories (default: scenarios/)")
    sens.add_argument("--system", help="as `memharness run --system` (default: every shipped system)")
    sens.add_argument("--tag", action="append", dest="tags", metavar="TAG", type=names,
                      help="replay only scenarios with this tag (as `memharness run --tag`)")
    sens.add_argument("--gates", type=path, help="gates TOML for every run (default: the suite's own gates.toml)")
    sens.add_argument("--target", default="memory_core", help="the package whose copy gets mutated (default: memory_core)")
    sens.add_argument("--catalogue", type=path,
                      help="spec-mutant TOML (default: the shipped catalogue when --target is memory_core)")
    sens.add_argument("--no-catalogue", action="store_true", help="run no spec mutants (only --generated ones)")
    sens.add_argument("--generated", type=int, default=0, metavar="N",
                      help="also run N cosmic-ray mutants of the target, sampled with --seed (needs the mutation extra)")
    sens.add_argument("--seed", type=int, default=0, help="sampling seed for --generated (default 0)")
    sens.add_argument("--module", action="append", dest="modules", metavar="GLOB",
                      help="sample --generated mutants only from the target's modules matching GLOB (e.g. 'sqlite/*'; "
                           "repeatable)")
    sens.add_argument("--equivalents", type=path, metavar="FILE",
                      help="TOML of generated mutants triaged as equivalent, left out of the score (default: the "
                           "shipped list when --target is memory_core)")
    sens.add_argument("--only", action="append", metavar="NAME", help="run only these mutants (repeatable; commas allowed)")
    sens.add_argument("--subset", help="run only the catalogue's named subset (e.g. ci)")
    sens.add_argument("--strategy", default="own",
                      help="strategies of each suite run, or 'own': each scenario's own, as a plain `memharness run` "
                           "(default own)")
    sens.add_argument("--jobs", type=_positive, default=2, help="mutants run in parallel (default 2)")
    sens.add_argument("--timeout", type=_seconds, help="seconds per mutant run (default: max(120, 6 x the baseline run))")
    sens.add_argument("--min-kill-rate", type=_rate, default=0.9, help="exit 1 below this kill rate (default 0.9)")
    sens.add_argument("--out", type=path, default="reports/sensitivity",
                      help="where sensitivity.json, sensitivity.md and coverage.md go (default: reports/sensitivity)")


TOP_HELP_WIDTH = 100
"""``memharness --help`` is formatted at this width whatever $COLUMNS says, so it can be served from
``TOP_HELP_FILE`` without building the parser (``memharness docs`` writes the file; a test keeps it current)."""


def _top_formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.HelpFormatter(prog, width=TOP_HELP_WIDTH)


def command_of(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names (its first word that is not an option), or None."""
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(command: str | None = "*") -> argparse.ArgumentParser:
    """The whole parser (``command="*"``), or one whose other subcommands have their names and help only: building
    every subcommand's arguments is most of what ``memharness --help`` would cost (``command=None``: none)."""
    p = _Parser(prog="memharness", description="Replay memory scenarios, measure recall/dedupe/index quality, gate CI.",
                formatter_class=_top_formatter)
    p.add_argument("--version", action="version", version=f"memharness {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    if command != "*":
        add_parser = sub.add_parser

        def only(name: str, **kwargs: Any) -> _Parser:
            parser = add_parser(name, **kwargs)
            if name != command:
                parser.add_argument = _unused  # type: ignore[method-assign,assignment]
            return parser
        sub.add_parser = only  # type: ignore[method-assign]
    run = sub.add_parser("run", help="replay scenarios and write a run directory")
    run.add_argument("paths", nargs="*", type=path, help="scenario files or directories (default: scenarios/)")
    run.add_argument("--strategy", default=None, type=names, help=STRATEGY_HELP)
    run.add_argument("--tag", action="append", dest="tags", metavar="TAG", type=names,
                     help="run only scenarios with this tag (repeatable; comma-separated allowed; any tag matches)")
    run.add_argument("--model", type=text_line,
                     help="litellm model string for the model strategy (default: the cassette's model)")
    run.add_argument("--api-base", type=text_line, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8765/v1")
    run.add_argument("--cassettes", type=path, help="cassette directory (default: <first path>/cassettes)")
    mode = run.add_mutually_exclusive_group()
    mode.add_argument("--record", action="store_true", help="call the real model for unrecorded calls and store them")
    mode.add_argument("--live", action="store_true", help="call the real model every time; store nothing")
    run.add_argument("--timeout-scale", type=_scale, default=1.0, help="multiply the spec's model timeouts (CPU models)")
    run.add_argument("--out", type=path, default=DEFAULT_OUT, help="run directory to write (default: reports/latest)")
    run.add_argument("--gates", type=path, help="gates TOML (default: <first path>/gates.toml when present)")
    run.add_argument("--no-gates", action="store_true", help="ignore the default gates file")
    run.add_argument("--baseline", type=path, help="a previous run directory to compare against")
    run.add_argument("--jobs", type=_positive, default=1, help="scenario × strategy runs replayed in parallel processes; from 2, "
                     "report.html is also written by a process of its own beside the other run files")
    run.add_argument("--shard", type=_shard, metavar="I/N",
                     help="run only the I-th of N slices of the scenarios (merge the shards with `memharness merge`)")
    run.add_argument("--system", help="a shipped system (reference, sqlite, sqlite:seed, mem0) or package.module:factory of "
                                      "your own MemorySystem (default: every shipped system but the opt-in mem0, each "
                                      "replaying the scenarios that target it; columns heuristic, heuristic@sqlite, ...; "
                                      "all: mem0 too, side by side; a comma-separated list of all, shipped names and "
                                      "your own module:factory specs, e.g. reference,sqlite,mypkg.memory:factory, "
                                      "replays each in one report, your own as heuristic@mypkg.memory:factory)")
    run.add_argument("--plugin", action="append", dest="plugins", metavar="MODULE",
                     help="a module path or .py file registering metrics of your own (harness.plugins; repeatable; "
                          "also $MEMHARNESS_PLUGINS and the memharness.plugins entry points)")
    run.add_argument("--benchmark", type=path, help="a benchmark.json from `memharness bench` to include in the report")
    run.add_argument("--fuzz-examples", type=_count, default=0,
                     help="also run the property suite with this many examples and add it to the report")
    val = sub.add_parser("validate", help="check scenario files; exit 0 or 2")
    val.add_argument("paths", nargs="+", type=path, help="scenario files or directories (every file under a directory)")
    val.add_argument("--strict", action="store_true",
                     help="also reject recall probes and check steps that assert nothing that can fail "
                          "(CI runs this on the suite)")
    rep = sub.add_parser("report", help="re-render report.html from a run directory")
    rep.add_argument("run_dir", type=path, help="a run directory (summary.json, results.jsonl, traces.jsonl)")
    rep.add_argument("-o", "--output", type=file_path, help="where to write the report (default: RUN_DIR/report.html)")
    cmp_ = sub.add_parser("compare", help="paired deltas between two run directories; exit 1 when a check flipped "
                                          "from pass to fail or a gate failed")
    cmp_.add_argument("base", type=path, help="the baseline run directory")
    cmp_.add_argument("cand", type=path, help="the candidate run directory, compared probe by probe with BASE")
    cmp_.add_argument("--gates", type=path, help="gates TOML; its max_drop gates with vs = \"baseline\" fail the "
                                                   "comparison (a check that flipped from pass to fail always does)")
    cmp_.add_argument("--max-drop", type=_drop, default=None, help="fail when any recall.f1 CI lies below -MAX_DROP")
    mer = sub.add_parser("merge", help="merge shard run directories into one")
    mer.add_argument("out", type=path, help="the merged run directory to write")
    mer.add_argument("shards", nargs="+", type=path, help="the shard run directories (from run --shard I/N)")
    mer.add_argument("--gates", type=path, help="gates TOML evaluated over the merged results")
    fz = sub.add_parser("fuzz", help="run the memory property suite; write shrunk failures as regression scenarios")
    fz.add_argument("--profile", choices=("dev", "ci"), default="ci",
                    help="dev: 50 examples, random; ci: 200 examples, derandomized (the default)")
    fz.add_argument("--max-examples", type=_positive, help="override the profile's example budget")
    fz.add_argument("--seed", type=int, default=0, help="Hypothesis seed of the random (dev) profile (default 0)")
    fz.add_argument("--system", help="package.module:factory of the system under test (default: the reference core)")
    fz.add_argument("--property", action="append", dest="properties", help="run only this property (repeatable)")
    fz.add_argument("--regressions", type=path, default="reports/fuzz-regressions",
                    help="where shrunk failures are written as scenarios (default: reports/fuzz-regressions, outside "
                         "the shipped suite; move one into scenarios/ to keep it as a regression)")
    fz.add_argument("--database", type=path, help="Hypothesis example database directory (default: none; with "
                    "--profile dev: the ci profile is derandomized and keeps no examples)")
    fz.add_argument("--min-precision", type=_floor, default=0.0,
                    help="the planted-fact recall property's per-probe precision floor (default 0.0)")
    fz.add_argument("--min-recall", type=_floor, default=1.0,
                    help="the planted-fact recall property's per-probe recall floor (default 1.0)")
    fz.add_argument("--out", type=path, help="also write fuzz.json here")
    bench = sub.add_parser("bench", help="benchmarks")
    bench_sub = bench.add_subparsers(dest="bench_command", required=True, parser_class=_Parser)
    loc = bench_sub.add_parser("locomo", help="LoCoMo turn-level evidence retrieval for every offline strategy")
    loc.add_argument("path", type=path, help="path to locomo10.json (how to download it: docs/locomo.md)")
    loc.add_argument("--strategy", default="heuristic,bm25,embedding,hybrid", type=names,
                     help="comma-separated offline strategies to score (default: heuristic,bm25,embedding,hybrid)")
    loc.add_argument("--mode", choices=("turns", "observations"), default="turns",
                     help="memories are the dialogue turns, or the dataset's per-session observations (default turns)")
    loc.add_argument("--out", type=path, default="reports/locomo", help="where the results go (default: reports/locomo)")
    imp = sub.add_parser("import", help="import a dataset as scenarios")
    imp_sub = imp.add_subparsers(dest="import_command", required=True, parser_class=_Parser)
    iloc = imp_sub.add_parser("locomo", help="LoCoMo conversations as scenario YAML")
    iloc.add_argument("path", type=path, help="path to locomo10.json (how to download it: docs/locomo.md)")
    iloc.add_argument("--out", type=path, required=True, help="the directory to write the scenario YAML files into")
    iloc.add_argument("--mode", choices=("turns", "observations"), default="turns",
                      help="memories are the dialogue turns, or the dataset's per-session observations (default turns)")
    trc = sub.add_parser("traces", help="trace tools")
    trc_sub = trc.add_subparsers(dest="traces_command", required=True, parser_class=_Parser)
    push = trc_sub.add_parser("push", help="send a finished run's traces.jsonl to an OTLP/HTTP backend (e.g. Phoenix)")
    push.add_argument("run_dir", type=path, help="a finished run directory (its traces.jsonl is sent)")
    push.add_argument("--endpoint", required=True, help="OTLP/HTTP base URL, e.g. http://127.0.0.1:6006")
    push.add_argument("--header", action="append", default=[], metavar="KEY=VALUE",
                      help="an extra HTTP header (repeatable), e.g. x-project-name=my-project")
    gh = sub.add_parser("github", help="GitHub tools (action.yml uses them)")
    gh_sub = gh.add_subparsers(dest="github_command", required=True, parser_class=_Parser)
    com = gh_sub.add_parser("comment", help="post a run's verdict (its summary.md) on the workflow's pull request "
                                            "as one comment, updated by later runs")
    com.add_argument("run_dir", type=path, help="a finished run directory (its summary.md is the comment; refused when "
                     "its records do not render it)")
    com.add_argument("--event", type=file_path, help="the workflow event JSON (default: $GITHUB_EVENT_PATH)")
    com.add_argument("--repo", type=owner_repo, help="OWNER/REPO (default: $GITHUB_REPOSITORY)")
    com.add_argument("--api", type=http_url,
                     help="the REST API URL (default: $GITHUB_API_URL, else https://api.github.com)")
    com.add_argument("--report-url", type=http_url, help="an http(s) link to the full report (e.g. the run's "
                     "artifacts page)")
    _add_sensitivity(sub)
    rec = sub.add_parser("record", help="record the model calls a cassette set lacks (missing or changed prompts); "
                                        "resumable, needs the model's server")
    rec.add_argument("paths", nargs="*", type=path, help="scenario files or directories (default: scenarios/)")
    rec.add_argument("--set", type=text_line,
                     help="a set of the cassette shelf (directory or alias in sets.toml; default: its default)")
    rec.add_argument("--cassettes", type=path, help="the cassette shelf or a set directory (default: <first path>/cassettes)")
    rec.add_argument("--model", type=text_line, help="litellm model string (default: the set's cassette-meta.json)")
    rec.add_argument("--api-base", type=text_line, help="OpenAI-compatible endpoint (default: the set's cassette-meta.json)")
    rec.add_argument("--timeout-scale", type=_scale, default=None, help="default: the set's cassette-meta.json")
    rec.add_argument("--tag", action="append", dest="tags", metavar="TAG", type=names, help="record only scenarios with this tag")
    rec.add_argument("--system", help="as `memharness run --system` (default: every shipped system)")
    rec.add_argument("--out", type=path, default="reports/record", help="the recording run's directory")
    con = sub.add_parser("conformance", help="check a memory system capability by capability (ok / wrong / missing "
                                             "method); exit 1 on any wrong or missing method")
    con.add_argument("paths", nargs="*", type=path, help="scenario files or directories (default: scenarios/)")
    con.add_argument("--system", required=True, help="a shipped system (reference, sqlite) or package.module:factory")
    con.add_argument("--cases", type=_positive, default=4, help="scenarios replayed per capability (default 4)")
    con.add_argument("--cassettes", type=path, help="the cassette set (or shelf) to replay model calls from, as "
                                                   "`memharness run --cassettes` (default: the first path's cassettes/)")
    ini = sub.add_parser("init", help="write a starter project (a scenario, gates, a system module, a CI workflow) "
                                      "that passes on its first run; docs/tutorial.md goes on from there")
    ini.add_argument("directory", nargs="?", type=path, default=".", help="the project directory (default: .)")
    cas = sub.add_parser("cassettes", help="cassette tools")
    cas_sub = cas.add_subparsers(dest="cassette_command", required=True, parser_class=_Parser)
    st = cas_sub.add_parser("status", help="list entries whose prompt version no longer matches the templates")
    st.add_argument("directory", type=path, help="a cassette set directory (e.g. scenarios/cassettes/qwen2.5-coder-1.5b)")
    add_report_commands(sub)
    return p
