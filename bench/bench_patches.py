"""Patch application scales linearly (issue 14: a 2,000-patch model answer took 70 s, quadratic).

    .venv/bin/python bench/bench_patches.py [--sizes 200 1000 2000] [--repeat 3] [--disk]

For each size, one model answer with that many distinct patches on one topic is validated (``plan_by_model``)
and applied (``apply_patches``) to an empty store; also the same count of patches that all merge into one doc.
Prints the median CPU and wall seconds per size and the least-squares log-log slope over the sizes (1.0 = linear,
2.0 = quadratic); CPU time is the number to trust on a shared machine. ``--disk`` uses a ``FileStore`` in a temp
directory (fsync off: this measures the algorithm, not the disk). Machines here are shared and noisy: run twice.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_core.clock import FixedClock
from memory_core.files.extract import apply_patches, plan_by_model
from memory_core.files.history import ChatMessage, transcript
from memory_core.files.store import FileStore, InMemoryStore, Store
from memory_core.model import ScriptedModel

NOW = datetime(2026, 4, 1, 8, 0, tzinfo=UTC)


def _answer(n: int, *, same: bool) -> dict[str, Any]:
    def summary(i: int) -> str:
        return "Prefers the default build option" if same else f"Prefers build option number {i} over the default"

    return {"patches": [{"topic": "user", "summary": summary(i), "why": f"reason {i}"} for i in range(n)]}


def _store(*, disk: bool) -> Store:
    if disk:
        return FileStore(Path(tempfile.mkdtemp(prefix="bench-patches-")) / "memory", FixedClock(NOW))
    return InMemoryStore(FixedClock(NOW))


def run_once(n: int, *, same: bool, disk: bool) -> tuple[float, float]:
    """(CPU seconds, wall seconds) to validate and apply one ``n``-patch answer."""
    store = _store(disk=disk)
    lines = transcript((ChatMessage("user", "I prefer many build options"),))
    model = ScriptedModel.of([_answer(n, same=same)])
    c0, w0 = time.process_time(), time.perf_counter()
    patches = plan_by_model(lines, [], model=model, timeout_s=1.0)
    apply_patches(store, patches, [], now=NOW)
    return time.process_time() - c0, time.perf_counter() - w0


def slope(sizes: list[int], seconds: list[float]) -> float:
    """Least-squares slope of log(seconds) over log(size)."""
    xs, ys = [math.log(s) for s in sizes], [math.log(max(t, 1e-9)) for t in seconds]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 1000, 2000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--disk", action="store_true", help="apply to a FileStore (fsync off) instead of memory")
    args = parser.parse_args()
    if args.disk:
        os.environ["MEMORY_CORE_FSYNC"] = "0"
    for same in (False, True):
        label = "all merge into one doc" if same else "distinct patches, one topic"
        runs = [[run_once(n, same=same, disk=args.disk) for _ in range(args.repeat)] for n in args.sizes]
        cpu = [statistics.median(c for c, _ in r) for r in runs]
        wall = [statistics.median(w for _, w in r) for r in runs]
        for n, c, w in zip(args.sizes, cpu, wall, strict=True):
            print(f"{label:28s} {n:6d} patches  cpu {c:7.3f} s  wall {w:7.3f} s  {c / n * 1e6:7.1f} us/patch (cpu)")
        print(f"{label:28s} log-log slope cpu {slope(args.sizes, cpu):.2f}, wall {slope(args.sizes, wall):.2f} "
              "(1.0 linear, 2.0 quadratic)")


if __name__ == "__main__":
    main()
