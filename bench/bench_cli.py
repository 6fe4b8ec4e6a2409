"""How long ``memharness`` takes to answer before it does any work: ``--help`` against the bare interpreter.

    .venv/bin/python bench/bench_cli.py [--rounds 21]

Per round, in a shuffled order, each contender runs once as a fresh process of this venv's interpreter (so the
interpreter's own start-up, ``site`` and this install's ``.pth`` files are in every number alike):

  bare argparse     python -c "import argparse; argparse.ArgumentParser().parse_args([])"   (the floor)
  memharness -h     python -m harness --help
  run -h            python -m harness run --help
  validate (1 file) python -m harness validate <one shipped scenario>   (a real command, for scale)

It prints the median wall time of each and, the number to read, the median over rounds of each contender's time
divided by the floor's in the same round (paired: a noisy moment hits both), with the load average it ran under.
The target (issue 34) is ``--help`` <= 1.2 x the floor.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _targets import target, write_json

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "scenarios" / "recall" / "multi-fact.yaml"
CONTENDERS = {
    "bare argparse": ["-c", "import argparse; argparse.ArgumentParser().parse_args([])"],
    "memharness -h": ["-m", "harness", "--help"],
    "run -h": ["-m", "harness", "run", "--help"],
    "validate (1 file)": ["-m", "harness", "validate", str(SCENARIO)],
}


def _once(args: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=REPO, env=env, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--json", metavar="PATH", help="also write the target's measurement there (bench_targets.py)")
    args = parser.parse_args()
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    times: dict[str, list[float]] = {name: [] for name in CONTENDERS}
    ratios: dict[str, list[float]] = {name: [] for name in CONTENDERS}
    rng = random.Random(0)
    load = os.getloadavg()
    for _ in range(args.rounds):
        order = list(CONTENDERS)
        rng.shuffle(order)
        got = {name: _once(CONTENDERS[name], env) for name in order}
        for name, value in got.items():
            times[name].append(value)
            ratios[name].append(value / got["bare argparse"])
    print(f"{args.rounds} interleaved rounds; load average before {load[0]:.2f}, after {os.getloadavg()[0]:.2f}")
    print(f"{'contender':<20} {'median ms':>10} {'x floor (paired median)':>24}")
    for name in CONTENDERS:
        print(f"{name:<20} {1000 * statistics.median(times[name]):>10.1f} {statistics.median(ratios[name]):>24.2f}")
    print("target: memharness -h <= 1.2 x bare argparse")
    floor = 1000 * statistics.median(times["bare argparse"])
    write_json(args.json, "bench_cli.py", [target(
        "--help vs bare start-up + argparse", statistics.median(ratios["memharness -h"]), 1.2, "lower",
        f"{1000 * statistics.median(times['memharness -h']):.1f} vs {floor:.1f} ms, {args.rounds} rounds")])


if __name__ == "__main__":
    main()
