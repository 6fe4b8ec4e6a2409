"""``memharness history``, ``memharness schema`` and ``memharness docs`` (the CLI reference generated from the parser)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from harness.cli._argtypes import bounded, file_path, path
from harness.errors import HarnessError, one_line, unique_members, unreadable_json

if TYPE_CHECKING:
    from pathlib import Path

DEFAULT_HISTORY: Final = "reports/history.sqlite"
DEFAULT_CLI_DOC: Final = "docs/cli.md"


_limit = bounded(int, lambda v: 1 <= v <= 100_000, "a whole number from 1 to 100000")


def add_report_commands(sub: argparse._SubParsersAction[Any]) -> None:
    """Register ``history``, ``schema`` and ``docs`` on the ``memharness`` subparsers."""
    hist = sub.add_parser("history", help="print the trend of each headline metric over the recorded runs")
    hist.add_argument("--db", type=path, default=None,
                      help="history database (default: $MEMHARNESS_HISTORY, else reports/history.sqlite)")
    hist.add_argument("--limit", type=_limit, default=10, help="how many of the latest runs to show (default 10)")
    hist.add_argument("--json", action="store_true", help="print the runs as JSON instead of a table")
    sch = sub.add_parser("schema", help="print the JSON Schema of scenario files (for editors and CI validation)")
    sch.add_argument("-o", "--output", type=file_path, help="write it to this file instead of stdout")
    docs = sub.add_parser("docs", help="write the CLI reference (docs/cli.md) and the stored "
                                             "`memharness --help`, generated from this parser")
    docs.add_argument("-o", "--output", type=file_path, default=DEFAULT_CLI_DOC, help="default docs/cli.md")
    docs.add_argument("--check", action="store_true", help="exit 1 when the file is not up to date; write nothing")


def scenario_schema() -> str:
    """The shipped JSON Schema of scenario files."""
    from importlib import resources

    return resources.files("harness.scenario").joinpath("scenario.schema.json").read_text(encoding="utf-8")


def cmd_schema(args: argparse.Namespace) -> int:
    text = scenario_schema()
    if args.output:
        from harness.reporting import atomic_write, wrote

        atomic_write(args.output, text)
        wrote(args.output)
    else:
        print(text, end="")
    return 0


def _cell(value: float | None) -> str:
    return "no data" if value is None else f"{value:.3g}"


def cmd_history(args: argparse.Namespace) -> int:
    from harness.reporting import read_history
    from harness.reporting._history import TREND_METRICS

    try:  # the variable's value goes through the --db argument type: its refusal names the variable (round 13)
        db = args.db or path(args.environ.get("MEMHARNESS_HISTORY") or DEFAULT_HISTORY)
    except argparse.ArgumentTypeError as exc:
        raise HarnessError(f"environment variable MEMHARNESS_HISTORY: {exc}") from None
    if not db.exists():
        raise HarnessError(f"{db}: no run history yet (every `memharness run` appends to it)")
    if not db.is_file():  # a directory or a device is no history: an error, not "0 run(s)" and exit 0
        raise HarnessError(f"{db}: not a regular file: expected a run history database (history.sqlite)")
    def refuse(where: Path, exc: BaseException) -> None:  # the history is what was asked for: an error, exit 2
        raise HarnessError(f"{where}: cannot read the run history ({type(exc).__name__}: {exc})")

    runs = read_history(db, limit=args.limit, warn=refuse)
    if args.json:
        import json

        print(json.dumps([{"run_id": r.run_id, "created_at": r.created_at, "git_commit": r.git_commit,
                           "passed": r.passed, "complete": r.complete, "metrics": r.metrics} for r in runs], indent=2))
        return 0
    print(f"{len(runs)} run(s) in {db} (oldest first)")
    strategies = list(dict.fromkeys(s for r in runs for s in r.metrics))
    header = ["run", "time (UTC)", "commit", "result", "systems | strategies"]
    columns = [(s, m) for s in strategies for m in TREND_METRICS]
    rows = [[one_line(r.run_id), one_line(r.created_at[:19].replace("T", " ")), one_line(r.git_commit[:10]) or "-",
             ("pass" if r.passed else "fail") + ("" if r.complete else " (incomplete)"), one_line(r.key) or "-"]
            + [_cell(r.metric(s, m)) for s, m in columns] for r in runs]  # a text value from the file: one line
    names = header + [one_line(f"{s} {m}") for s, m in columns]
    widths = [max(len(n), *(len(row[i]) for row in rows)) if rows else len(n) for i, n in enumerate(names)]
    print("  ".join(n.ljust(w) for n, w in zip(names, widths, strict=True)))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    same = [r for r in runs if r.key == runs[-1].key] if runs else []  # a trend joins runs of one key only
    if len(same) >= 2:
        first, last = same[0], same[-1]
        for s, m in columns:
            a, b = first.metric(s, m), last.metric(s, m)
            if a is not None and b is not None:
                print(one_line(f"trend {s} {m}: {a:.3g} -> {b:.3g} ({b - a:+.3g} over {len(same)} runs of "
                               f"{last.key or '-'})"))
    return 0


def cli_markdown(parser: argparse.ArgumentParser) -> str:
    """The CLI reference in Markdown, generated from the parser: every command, argument, default and help.
    Usage lines are wrapped at 100 columns whatever the terminal (the output must not depend on $COLUMNS)."""

    def fixed(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
        p.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=100)
        return p

    fixed(parser)
    lines = ["# CLI reference", "", "<!-- generated by `memharness docs`; do not edit by hand "
             "(tests/harness/test_docs_schema.py checks it is up to date) -->", "",
             parser.description or "", "", "```", parser.format_usage().strip(), "```", ""]

    def walk(p: argparse.ArgumentParser, name: str, level: int) -> None:
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                helps = {a.dest: a.help or "" for a in action._choices_actions}
                for sub_name, sub in action.choices.items():
                    fixed(sub)
                    full = f"{name} {sub_name}"
                    lines.extend([f"{'#' * level} `{full}`", "", helps.get(sub_name, ""), "", "```",
                                  sub.format_usage().replace("usage: ", "").strip(), "```", ""])
                    rows = []
                    for a in sub._actions:
                        if isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)):
                            continue
                        flag = ", ".join(f"`{o}`" for o in a.option_strings) or f"`{a.dest}`"
                        default = "" if a.default in (None, False, argparse.SUPPRESS) or not a.option_strings \
                            or "default" in (a.help or "") else f" (default: `{a.default}`)"  # said once
                        choices = f" (one of: {', '.join(map(str, a.choices))})" if a.choices else ""
                        rows.append(f"| {flag} | {(a.help or '').replace('|', '/')}{choices}{default} |")
                    if rows:
                        lines.extend(["| argument | meaning |", "|---|---|", *rows, ""])
                    walk(sub, full, min(level + 1, 4))

    walk(parser, parser.prog, 2)
    return "\n".join(lines).rstrip() + "\n"


def top_help_path() -> Path:
    """Where ``memharness --help`` is stored (``harness/cli/top_help.txt``)."""
    from pathlib import Path

    from harness.cli import TOP_HELP_FILE

    return Path(__file__).with_name(TOP_HELP_FILE)


def _written(out: Path) -> str | None:
    """What ``out`` holds now as ``read_text`` reads it (universal newlines; nothing when it does not exist), or
    None for bytes that are not UTF-8 (out of date); a FIFO, a device or a directory is one line, exit 2, without
    blocking (round 12: a FIFO held ``docs --check`` for ever; bytes not UTF-8 were an internal error)."""
    from harness.scenario._limits import MAX_RUN_FILE_BYTES
    from harness.scenario._yaml import read_regular

    if not out.exists():  # a dangling link too: nothing there yet
        return ""
    try:
        return read_regular(out, limit=MAX_RUN_FILE_BYTES, error=HarnessError).decode("utf-8").replace(
            "\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError:
        return None


def cmd_docs(args: argparse.Namespace) -> int:
    """Write (or ``--check``) the CLI reference and the stored ``memharness --help``, both from the parser."""
    from harness.cli._parser import build_parser

    outputs = [(args.output, cli_markdown(build_parser())), (top_help_path(), build_parser().format_help())]
    if args.check:
        stale = [str(out) for out, text in outputs if _written(out) != text]
        for out in stale:
            print(f"{out}: out of date; run `memharness docs`")
        if not stale:
            print(f"{args.output}, {top_help_path()}: up to date")
        return 1 if stale else 0
    from harness.errors import unwritable
    from harness.reporting import atomic_write, wrote

    for out, _ in outputs:  # fix (hostile probe, round 11): the CLI reference was written, then the package's
        if (locked := unwritable(out, replaced=True)) is not None:  # stored help refused (an install the user cannot write)
            raise HarnessError(f"{one_line(str(out))}: {one_line(str(locked))} is not writable (nothing written)")
    for out, text in outputs:
        atomic_write(out, text)
        wrote(out)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    """Every file's problem, not only the first file's: each file is loaded on its own (a file stops at its first
    problem: what follows a broken key cannot be read reliably), then ids are checked across files."""
    from harness.errors import ScenarioError
    from harness.scenario import load_scenario, strict_problems
    from harness.scenario._load import discover, duplicate_ids

    scenarios, problems = [], []
    for file, root in discover(args.paths):
        try:
            scenarios.append(load_scenario(file, suite_root=root))
        except ScenarioError as exc:
            problems.append(str(exc))
    problems += duplicate_ids(scenarios)
    if any(any(m.system for m in s.memories) or any(getattr(st, "system", None) or getattr(st, "options", None)
                                                  for st in s.steps) for s in scenarios):  # seed fields, recall/forget
        from harness.replay import input_problems  # options, system checks a shipped system refuses (its code decides;
        # round 19: a portable file's step-level input was judged only when a memory had seed fields)

        problems += [p for s in scenarios for p in input_problems(s)]
    problems += [p for s in scenarios for p in strict_problems(s)] if args.strict else []
    for problem in problems:  # each one printable line, as main() prints every other error (round 14: a system's
        print(f"memharness: {one_line(problem)}", file=sys.stderr)  # input check quoted a key's U+FEFF raw)
    if problems:
        return 2
    print(f"{len(scenarios)} scenario(s) valid" + (" (strict)" if args.strict else ""))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from harness.reporting import atomic_write, history_path, read_history, read_run, render_report, wrote
    from harness.reporting._history import run_key

    summary, results, spans = read_run(args.run_dir)
    target = args.output or args.run_dir / "report.html"
    history = read_history(history_path(args.run_dir, args.environ), key=run_key(summary))
    atomic_write(target, render_report(summary, results, spans, history=history))
    wrote(target)
    return 0


def trace_url(environ: Mapping[str, str]) -> str | None:
    """Where a trace of this run can be opened when it was exported: ``MEMHARNESS_TRACE_URL`` (an http(s) URL template
    with ``{trace_id}``, checked before any work: ``trace_url_problem``; empty or spaces only: unset), else Phoenix's
    trace redirect on the OTLP endpoint's host when that makes such a URL (else no link)."""
    if environ.get("MEMHARNESS_TRACE_URL", "").strip():
        return environ["MEMHARNESS_TRACE_URL"].strip()
    endpoint = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    from harness.telemetry import exporters

    if not endpoint or "otlp" not in exporters(environ, "OTEL_TRACES_EXPORTER", "otlp"):
        return None
    base = endpoint.rstrip("/").removesuffix("/v1/traces")
    from harness.reporting._stored import trace_url_problem

    derived = f"{base}/redirects/traces/{{trace_id}}"  # a run directory read back holds it to the same rule
    return None if trace_url_problem(derived) else derived


def read_benchmark(path: Path) -> dict[str, Any]:
    """A ``memharness bench`` JSON file for the report: a regular UTF-8 file holding the object ``bench`` writes
    (every field the report shows, of its type: harness/tools/_bench_shape.py), or one located line (a FIFO or a
    device is refused without blocking)."""
    from harness.reporting._located import problem_line
    from harness.scenario._limits import MAX_RUN_FILE_BYTES
    from harness.scenario._yaml import decode_utf8, read_regular
    from harness.tools._bench_shape import benchmark_problem

    text = decode_utf8(read_regular(path, limit=MAX_RUN_FILE_BYTES, error=HarnessError), path, HarnessError)
    try:
        data = json.loads(text, object_pairs_hook=unique_members)
    except json.JSONDecodeError as exc:
        raise HarnessError(f"{path}:{exc.lineno}: file: cannot read the benchmark file ({exc.msg})") from None
    except (RecursionError, ValueError) as exc:
        raise HarnessError(unreadable_json(path, text, "file: cannot read the benchmark file", exc)) from None
    if (problem := benchmark_problem(data)) is not None:
        line = problem_line(text, data, problem) if isinstance(data, dict) else 1
        raise HarnessError(f"{path}:{line}: {problem} (not a benchmark file of `memharness bench`?)")
    assert isinstance(data, dict)  # benchmark_problem: an object
    return data


def read_run_inputs(args: argparse.Namespace) -> dict[str, Any] | None:
    """What ``run`` reads besides its scenarios, read (or refused in one line) before any replay: ``--baseline``
    (checked here, read again after the replay) and ``--benchmark`` (returned).

    fix (hostile probe, round 11): a ``--baseline`` that is no readable run (a typo, a scenario directory, an
    unreadable or damaged file) was refused only after the whole replay, ``--fuzz-examples`` included, and the run
    directory was never written: the replay was lost."""
    if args.baseline is not None:
        from harness.reporting import read_run

        read_run(args.baseline)
    return read_benchmark(args.benchmark) if args.benchmark else None
