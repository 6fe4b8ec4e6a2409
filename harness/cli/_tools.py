"""The CLI's tool commands: ``fuzz``, ``bench``, ``import`` and ``cassettes`` (``harness.cli`` dispatches here)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import HarnessError, one_line
from harness.scenario import load_all

if TYPE_CHECKING:
    from harness.tools._fuzz import FuzzReport


def run_fuzz(*, system: str | None, max_examples: int, seed: int, regressions: Path | None, database: Path | None,
             only: Sequence[str] | None = None, min_precision: float = 0.0, min_recall: float = 1.0,
             derandomize: bool = False, echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the property suite and return its report as a dict."""
    from harness.tools import Thresholds, default_properties

    props = default_properties(Thresholds(min_precision, min_recall))
    if only:
        unknown = sorted(set(only) - {p.name for p in props})
        if unknown:
            raise HarnessError(f"unknown property {unknown[0]!r}; expected one of {', '.join(p.name for p in props)}")
        props = [p for p in props if p.name in only]
    options: dict[str, Any] = {"max_examples": max_examples, "seed_value": seed, "regressions": regressions,
                               "database": database, "derandomize": derandomize}
    with _hypothesis_home(database):
        report = _fuzz(props, system, options, Thresholds(min_precision, min_recall))
    for p in report.properties:
        status = "held" if p.passed else "FAILED"
        echo(f"{status:6} {p.name:28} {p.examples:4} examples {p.seconds:6.1f}s"
             + (f"  {p.failure}" if p.failure else "") + (f"\n       regression: {p.regression}" if p.regression else ""))
    return report.as_dict()


@contextlib.contextmanager
def _hypothesis_home(database: Path | None) -> Iterator[None]:
    """Hypothesis's own files (its constants cache) go beside ``--database`` when one is given, else into a
    temporary directory removed afterwards: with no database, `memharness fuzz` writes nothing into the current
    directory (it left a `.hypothesis/` there). The previous home is restored (a library caller's, pytest's)."""
    from hypothesis import configuration

    previous = vars(configuration).get("__hypothesis_home_directory")
    with tempfile.TemporaryDirectory(prefix="memharness-hypothesis-") as home:
        configuration.set_hypothesis_home_dir(database.parent / ".hypothesis" if database is not None else home)
        try:
            yield
        finally:
            configuration.set_hypothesis_home_dir(previous)


def _fuzz(props: Sequence[Any], system: str | None, options: dict[str, Any], thresholds: Any) -> FuzzReport:
    from harness.replay import load_factory, plugin_traits, shipped
    from harness.tools import fuzz

    if shipped(system):
        report = fuzz(props, factory=load_factory(system), system_name=system or "reference", **options)
    else:  # a plug-in system: each property in a child process the harness can kill; its module never imported here
        from harness.tools._fuzz import FuzzReport
        from harness.tools._fuzz_isolated import run_property_isolated

        assert system is not None
        plugin_traits(system)  # an import that exits, raises or hangs: one line, before any property
        report = FuzzReport(system, options["max_examples"], options["seed_value"])
        for prop in props:
            report.properties.append(run_property_isolated(prop.name, prop.description, system=system,
                                                           thresholds=thresholds, **options))
    return report


def cmd_fuzz(args: argparse.Namespace) -> int:
    from harness.tools import PROFILES

    profile = PROFILES[args.profile]
    if args.database is not None and profile["derandomize"]:  # fix (hostile probe, round 11): Hypothesis refused it
        from harness.errors import HarnessError  # deep inside, an internal error (InvalidArgument), for every --database

        raise HarnessError(f"{args.database}: --database: the {args.profile} profile is derandomized and keeps no "
                           "examples; use --profile dev to keep them")
    report = run_fuzz(system=args.system, max_examples=args.max_examples or int(profile["max_examples"]),
                      seed=args.seed, regressions=args.regressions, database=args.database, only=args.properties,
                      min_precision=args.min_precision, min_recall=args.min_recall,
                      derandomize=bool(profile["derandomize"]))
    if args.out:
        from harness.reporting import atomic_write

        atomic_write(args.out / "fuzz.json", json.dumps(report, indent=2) + "\n")
    return 0 if report["passed"] else 1


def cmd_bench(args: argparse.Namespace) -> int:
    from harness.reporting import atomic_write, render_benchmark
    from harness.tools._bench import format_table, run_benchmark

    strategies = [s.strip() for s in args.strategy.split(",") if s.strip()]
    bench = run_benchmark(args.path, strategies, mode=args.mode,
                          progress=lambda line: print(line, file=sys.stderr))
    table = format_table(bench)
    print(table)
    atomic_write(args.out / "benchmark.json", json.dumps(bench, indent=1) + "\n")
    atomic_write(args.out / "benchmark.txt", table + "\n")
    atomic_write(args.out / "report.html", render_benchmark(bench))
    print(f"wrote {one_line(str(args.out))}/report.html")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from harness.errors import ScenarioError, one_line
    from harness.reporting import write_dir
    from harness.scenario import dump_yaml
    from harness.tools._locomo import load_locomo, to_scenarios

    scenarios = to_scenarios(load_locomo(args.path), mode=args.mode)
    files = {f"{data['id'].split('/', 1)[1]}.yaml": dump_yaml(data) for data in scenarios}  # names: load_locomo
    with tempfile.TemporaryDirectory(prefix="memharness-import-") as tmp:  # what we write must load: checked first
        for name, text in files.items():
            (Path(tmp) / name).write_text(text, encoding="utf-8")
        try:
            load_all([Path(tmp) / name for name in files])
        except ScenarioError as exc:
            raise HarnessError(f"{one_line(str(args.path))}: a scenario made from it is invalid, nothing written: "
                               f"{str(exc).replace(tmp + os.sep, '')}") from None
    write_dir(args.out, files)  # every file or none (a kill, a full disk), the directory's other files kept
    print(f"wrote {len(scenarios)} scenario(s) to {one_line(str(args.out))}")
    return 0


def cmd_cassettes(args: argparse.Namespace) -> int:
    from harness.errors import one_line
    from harness.replay import Cassette

    if not args.directory.is_dir():  # status of a set that is not there is an error, never "0 entries"
        what = "not a directory" if args.directory.exists() else "no such directory"
        raise HarnessError(f"{one_line(str(args.directory))}: {what}: expected a cassette set (a directory holding "
                           "cassette.jsonl) or a shelf of sets (sets.toml)")
    cassette = Cassette.open(args.directory)
    if not any((cassette.directory / name).exists() for name in ("cassette.jsonl", "cassette-meta.json")):
        # round 15b: an empty or unrelated directory said "0 entries", exit 0, as if it were an empty set
        raise HarnessError(f"{one_line(str(cassette.directory))}: not a cassette set (no cassette.jsonl or "
                           "cassette-meta.json; nor a shelf of sets, sets.toml): record into it first, or name the set")
    stale = list(cassette.stale())
    print(f"{len(cassette)} entries in {one_line(str(args.directory))}; {len(stale)} recorded with a prompt that has "
          "changed since")
    for entry, changes in stale:  # purpose, scenario and step may be absent; any text a file's, escaped (round 20)
        print("  " + one_line(f"{entry['key'][:16]} {entry.get('purpose', '(no purpose)')} ({entry.get('scenario')} "
                              f"step {entry.get('step')}): " + "; ".join(changes)))
    return 1 if stale else 0


def cmd_github(args: argparse.Namespace) -> int:
    from harness.tools._github import post_verdict

    env = args.environ  # main()'s environment
    print(post_verdict(args.run_dir, event_path=str(args.event or env.get("GITHUB_EVENT_PATH", "")),
                       repo=args.repo or env.get("GITHUB_REPOSITORY", ""),
                       api=args.api or env.get("GITHUB_API_URL") or "https://api.github.com",
                       token=env.get("GITHUB_TOKEN", ""), report_url=args.report_url or ""))
    return 0


def cmd_traces(args: argparse.Namespace) -> int:
    from harness.tools._push import push

    headers = dict(h.split("=", 1) for h in args.header if "=" in h)
    bad = [h for h in args.header if "=" not in h]
    if bad:
        raise HarnessError(f"--header {bad[0]!r}: expected KEY=VALUE")
    sent = push(args.run_dir, args.endpoint, headers=headers)
    print(f"pushed {sent} span(s) from {args.run_dir}/traces.jsonl to {args.endpoint}")
    return 0
