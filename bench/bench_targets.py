"""Every issue-34 target in one run: each benchmark in turn (a fresh process each), then one table.

    .venv/bin/python bench/bench_targets.py                 # ~15 min on a quiet 2-core box
    .venv/bin/python bench/bench_targets.py --quick         # tiny sizes, ~1 min: checks the plumbing, not the numbers

In order (one at a time, so they do not load each other): ``bench_cli.py`` (``--help`` against a bare interpreter
plus argparse), ``bench_recall.py`` (cold recall against naive upstream; warm recall through the harness's store
wrapper against the plain store), ``bench_telemetry.py`` (a replay with telemetry exported against the SDK
disabled), ``bench_suite.py`` (suite scaling, peak memory, ``--jobs 2``, a 600-turn conversation) and one default
``memharness run`` (the harness's own time against the systems' own time, per strategy, from ``summary.json``'s
``harness.overhead_ms`` and ``harness.system_ms``). Each script writes its measurements with ``--json``; this one
prints every target with its value, its limit, met or missed, and the 1-minute load average it ran under (the box
is shared: a target measured at a load above the core count says little). ``--out FILE`` keeps the table as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _targets import met, target, write_json

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def _scripts(*, quick: bool) -> list[list[str]]:
    if quick:
        return [["bench_cli.py", "--rounds", "3"], ["bench_recall.py", "--quick", "--no-scaling"],
                ["bench_telemetry.py", "--quick"], ["bench_suite.py", "--quick"]]
    return [["bench_cli.py", "--rounds", "21"], ["bench_recall.py", "--sizes", "200,1000", "--no-scaling"],
            ["bench_telemetry.py", "--rounds", "15"], ["bench_suite.py"]]


def _overhead(work: Path, *, quick: bool) -> list[dict[str, Any]]:
    """The default run (every shipped scenario, every shipped system); per strategy column, harness / system."""
    out = work / "run"
    cmd = [sys.executable, "-m", "harness", "run", "--out", str(out)]
    if quick:
        cmd[4:4] = [str(REPO / "scenarios" / "recall")]
        cmd.append("--no-gates")
    done = subprocess.run(cmd, cwd=REPO, env=ENV, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not (out / "summary.json").is_file():
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}:\n{(done.stdout + done.stderr)[-3000:]}")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    rows = []
    for column, block in summary["strategies"].items():
        metrics = block.get("metrics") or {}
        system, harness = metrics.get("harness.system_ms"), metrics.get("harness.overhead_ms")
        if system and harness is not None:
            rows.append(target(f"harness / system time, {column}", harness / system, 1.0, "lower",
                               f"harness {harness:.0f} ms, system {system:.0f} ms over "
                               f"{'scenarios/recall' if quick else 'the default run'}"))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: checks the plumbing, not the numbers")
    parser.add_argument("--out", metavar="FILE", help="also write every target as JSON there")
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-targets-") as tmp:
        work = Path(tmp)
        for k, script in enumerate(_scripts(quick=args.quick)):
            path = work / f"{k}.json"
            print(f"--- {' '.join(script)} (load average {os.getloadavg()[0]:.2f})", flush=True)
            done = subprocess.run([sys.executable, str(HERE / script[0]), *script[1:], "--json", str(path)],
                                  cwd=REPO, env=ENV, check=False)
            if done.returncode != 0 or not path.is_file():
                raise SystemExit(f"{script[0]} exited {done.returncode}: no measurements")
            rows += json.loads(path.read_text(encoding="utf-8"))["targets"]
        print(f"--- memharness run (load average {os.getloadavg()[0]:.2f})", flush=True)
        rows += _overhead(work, quick=args.quick)
    print(f"\nissue 34 targets, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
          f"{time.perf_counter() - started:.0f} s{' (--quick: sizes too small to mean anything)' if args.quick else ''}")
    print(f"{'target':<52}{'value':>8}{'limit':>9}  {'':<7}{'load':>6}  detail")
    for row in rows:
        verdict = {True: "met", False: "MISSED", None: "n/a"}[met(row)]
        sign = "<=" if row["better"] == "lower" else ">="
        print(f"{row['name']:<52}{row['value']:>8.3f}{sign:>4}{row['limit']:>5.2f}  {verdict:<7}{row['load']:>6.2f}  "
              f"{row['detail']}")
    write_json(args.out, "bench_targets.py", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
