"""What OpenTelemetry costs a replay: the shipped suite replayed with telemetry exported vs the SDK disabled.

    .venv/bin/python bench/bench_telemetry.py [--rounds 7] [--quick]

Per round, in one process and in a shuffled order, every contender replays the same scenarios once (heuristic,
reference system, no model), so load on this shared box hits all of them alike:

  sdk disabled    OTEL_SDK_DISABLED=true: no-op tracer, meter and logger (the floor)
  spans kept      the run's providers; spans kept in memory, never encoded
  export on       the run's providers; after each scenario its spans encoded to OTLP/JSON, and at the end of the
                  round written to a traces.jsonl by the run's own writer (what `memharness run` does)

It prints the median and p95 suite time per contender and, the number to read, the median over rounds of each
contender's CPU time (``time.process_time``: what this process did, not what the box's other jobs did) divided by
the floor's in the same round (paired, so a noisy moment hits both). The target
(issue 34; issue 19 asked 1.05) is export on <= 1.03 x sdk disabled. Scenario work directories go to /dev/shm when it exists
(``--tmp``) and the core's fsync is off (``MEMORY_CORE_FSYNC=0``) unless ``--fsync``: disk latency on a shared box
is noise far larger than the effect measured, and a smaller denominator only makes the overhead ratio stricter.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _targets import target, write_json

from harness.replay import replay
from harness.scenario import Scenario, load_all
from harness.telemetry import TelemetrySetup, build_telemetry, otlp_jsonl, otlp_spans

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


def _eligible(s: Scenario) -> bool:
    return (not s.systems or "reference" in s.systems) and (not s.strategies or "heuristic" in s.strategies) \
        and s.scripted_model is None


def _setup(*, disabled: bool) -> TelemetrySetup:
    old = os.environ.get("OTEL_SDK_DISABLED")
    os.environ["OTEL_SDK_DISABLED"] = "true" if disabled else "false"
    try:  # the SDK reads the variable when a provider is built
        return build_telemetry({}, run_id="bench", suite="bench")
    finally:
        if old is None:
            del os.environ["OTEL_SDK_DISABLED"]
        else:
            os.environ["OTEL_SDK_DISABLED"] = old


def _contender(scenarios: list[Scenario], setup: TelemetrySetup, traces: Path | None) -> Callable[[], Callable[[], int]]:
    """One round: replay every scenario; with ``traces``, take each scenario's spans as OTLP/JSON and write them all
    at the end, as ``memharness run`` does. Returns how to count the round's spans (called outside the timing)."""
    def run() -> Callable[[], int]:
        kept = 0
        requests: list[dict[str, Any]] = []
        for s in scenarios:
            replay(s, strategy="heuristic", telemetry=setup.telemetry)
            if traces is None:
                kept += len(setup.jsonl.spans)
                setup.jsonl.spans.clear()
            else:
                requests += setup.jsonl.take()
        if traces is not None:
            traces.write_text(otlp_jsonl(requests), encoding="utf-8")
        return lambda: kept + len(otlp_spans(requests))
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="2 rounds over 5 scenarios (keeps the script working)")
    parser.add_argument("--tmp", default="/dev/shm" if os.path.isdir("/dev/shm") else None,
                        help="directory for scenario work directories (default /dev/shm when present)")
    parser.add_argument("--fsync", action="store_true", help="keep the core's fsync of every write")
    parser.add_argument("--json", metavar="PATH", help="also write the target's measurement there (bench_targets.py)")
    args = parser.parse_args(argv)
    saved = {name: os.environ.get(name) for name in ("TMPDIR", "MEMORY_CORE_FSYNC")}
    saved_tempdir = tempfile.tempdir
    try:
        if args.tmp:
            os.environ["TMPDIR"] = args.tmp
            tempfile.tempdir = None  # re-read TMPDIR
        if not args.fsync:
            os.environ["MEMORY_CORE_FSYNC"] = "0"
        return _measure(args)
    finally:  # a caller in the same process (the bench's test) gets its environment and collector back
        gc.unfreeze()
        tempfile.tempdir = saved_tempdir
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _measure(args: argparse.Namespace) -> int:
    scenarios = [s for s in load_all([SCENARIOS]) if _eligible(s)]
    gc.freeze()  # as `memharness run` does once its scenarios are loaded
    rounds = args.rounds
    if args.quick:
        scenarios, rounds = scenarios[:5], 2
    with tempfile.TemporaryDirectory() as tmp:
        contenders = {
            "sdk disabled": _contender(scenarios, _setup(disabled=True), None),
            "spans kept": _contender(scenarios, _setup(disabled=False), None),
            "export on": _contender(scenarios, _setup(disabled=False), Path(tmp) / "traces.jsonl"),
        }
        for run in contenders.values():  # warm every cache and import once, untimed
            run()
        samples: dict[str, list[float]] = {name: [] for name in contenders}
        spans: dict[str, int] = {}
        rng = random.Random(0)
        for _ in range(rounds):
            order = list(contenders)
            rng.shuffle(order)
            for name in order:
                t0 = time.process_time()  # this process's CPU: the work telemetry adds, not the neighbours' load
                count = contenders[name]()
                samples[name].append((time.process_time() - t0) * 1000)
                spans[name] = count()
    floor = samples["sdk disabled"]
    print(f"replay of {len(scenarios)} shipped scenarios (heuristic), {rounds} interleaved rounds, CPU milliseconds "
          f"(work dirs in {args.tmp or tempfile.gettempdir()}, fsync {'on' if args.fsync else 'off'})")
    print(f"{'contender':<14}{'p50':>10}{'p95':>10}{'spans':>8}{'paired ratio / disabled (min-max)':>36}")
    ratios: dict[str, float] = {}
    for name, values in samples.items():
        p50 = statistics.median(values)
        p95 = sorted(values)[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
        paired = [v / f for v, f in zip(values, floor, strict=True)]
        ratios[name] = statistics.median(paired)
        print(f"{name:<14}{p50:>10.1f}{p95:>10.1f}{spans[name]:>8}{ratios[name]:>18.3f} "
              f"({min(paired):.3f}-{max(paired):.3f})")
    print(f"telemetry overhead with export on: {(ratios['export on'] - 1) * 100:+.1f}% of a replay "
          f"(median paired ratio; target <= +3%)")
    write_json(args.json, "bench_telemetry.py", [target(
        "telemetry on (export) vs off", ratios["export on"], 1.03, "lower",
        f"CPU ms p50 {statistics.median(samples['export on']):.0f} vs {statistics.median(floor):.0f}, spans kept "
        f"{ratios['spans kept']:.3f}, {rounds} rounds over {len(scenarios)} scenarios")])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
