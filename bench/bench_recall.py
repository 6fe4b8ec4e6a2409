"""Recall against its physical floors and a naive upstream reimplementation, plus the scaling slopes.

    .venv/bin/python bench/bench_recall.py [--sizes 200,1000,10000] [--rounds 40] [--quick]

For each store size (topic files of ~4 KB, page cache warm) the contenders run interleaved, in a shuffled order
each round, on the same query:

* ``stat floor``: list the tree with ``os.scandir`` and ``stat`` every file (all a warm cache must do);
* ``read floor``: the same and read every file;
* ``naive upstream``: re-list, re-read and re-parse (YAML) every file per call, then score and build the prompt,
  as spec §3/§7 describe (``bench/naive_upstream.py``);
* ``recall DocCache``: ``memory_core.files.recall`` with the parsed-doc cache alone (the old warm path);
* ``recall cold``: ``recall`` with a new ``RecallCache`` per call (nothing cached but the OS page cache);
* ``recall warm``: ``recall`` with one ``RecallCache`` kept across calls;
* ``warm via wrapper``: the same through the harness's own store wrapper (``FaultyStore``, the one every replay of
  the reference system uses, no fault armed): the fast path follows the store protocol (``plain_root()``), not a
  concrete type (issue 34: <= 1.1 x ``recall warm``).

Then the log-log slopes of the p50s over the two largest sizes (1,000 → 10,000 by default) for warm recall, dedupe
planning (``plan_dedupe``, entries), model patch application (``apply_patches``, patches on one topic) and the index
rebuild (``rebuild_index`` with a warm cache). A slope near 1 is linear, 2 quadratic. ``--quick`` runs tiny sizes
in a few seconds (CI runs it to keep this script working; the numbers then mean little). Machines here are
shared and noisy: read the ratios, and run twice.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _targets import target, write_json
from bench_corpus import NOW, QUERIES, build_store, dedupe_docs, memory_store
from naive_upstream import recall_naive

from harness.systems.faulty_store import FaultyStore
from memory_core.files.dedupe import plan_dedupe
from memory_core.files.extract import apply_patches
from memory_core.files.index import rebuild_index
from memory_core.files.patches import Patch
from memory_core.files.recall import recall
from memory_core.files.scan import DocCache
from memory_core.files.snapshot import RecallCache
from memory_core.files.store import FileStore

Timings = dict[str, list[float]]


def stat_floor(root: str) -> int:
    """``stat`` every file under ``root``."""
    n, stack = 0, [root]
    while stack:
        with os.scandir(stack.pop()) as it:
            for entry in it:
                if entry.is_dir():
                    stack.append(entry.path)
                else:
                    n += entry.stat().st_size
    return n


def read_floor(root: str) -> int:
    """Read every file under ``root``."""
    n, stack = 0, [root]
    while stack:
        with os.scandir(stack.pop()) as it:
            for entry in it:
                if entry.is_dir():
                    stack.append(entry.path)
                else:
                    with open(entry.path, encoding="utf-8", newline="") as handle:
                        n += len(handle.read())
    return n


def interleaved(contenders: dict[str, Callable[[int], object]], rounds: int, *, seed: int = 1) -> Timings:
    """Milliseconds per call of each contender; every round runs each once, in a shuffled order."""
    rng = random.Random(seed)
    out: Timings = {name: [] for name in contenders}
    names = list(contenders)
    for r in range(rounds):
        rng.shuffle(names)
        gc.collect()
        for name in names:
            fn = contenders[name]
            t0 = time.perf_counter_ns()
            fn(r)
            out[name].append((time.perf_counter_ns() - t0) / 1e6)
    return out


def p50(samples: Sequence[float]) -> float:
    return statistics.median(samples)


def p95(samples: Sequence[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


def recall_contenders(store: FileStore, *, checks: int) -> dict[str, Callable[[int], object]]:
    root = os.fspath(store.root)
    warm, docs, wrapped_warm, wrapped = RecallCache(), DocCache(), RecallCache(), FaultyStore(store)
    for q in QUERIES[:checks]:  # warm up, and check every path selects what the naive one does
        expected = [d.relative_path for d in recall_naive(root, q, now=NOW)[1]]
        for where, cache in ((store, warm), (store, docs), (store, RecallCache()), (wrapped, wrapped_warm)):
            got = recall(where, q, now=NOW, cache=cache)
            if [d.relative_path for d in got.selected] != expected:
                raise SystemExit(f"recall selected {got.selected} but the naive upstream path {expected} for {q!r}")
    return {
        "stat floor": lambda r: stat_floor(root),
        "read floor": lambda r: read_floor(root),
        "naive upstream": lambda r: recall_naive(root, QUERIES[r % len(QUERIES)], now=NOW),
        "recall DocCache": lambda r: recall(store, QUERIES[r % len(QUERIES)], now=NOW, cache=docs),
        "recall cold": lambda r: recall(store, QUERIES[r % len(QUERIES)], now=NOW, cache=RecallCache()),
        "recall warm": lambda r: recall(store, QUERIES[r % len(QUERIES)], now=NOW, cache=warm),
        "warm via wrapper": lambda r: recall(wrapped, QUERIES[r % len(QUERIES)], now=NOW, cache=wrapped_warm),
    }


def recall_targets(files: int, timings: Timings) -> list[dict[str, Any]]:
    """Issue 34's recall targets at this size: cold recall against naive upstream, the wrapper against plain."""
    naive, cold = p50(timings["naive upstream"]), p50(timings["recall cold"])
    warm, wrapped = p50(timings["recall warm"]), p50(timings["warm via wrapper"])
    return [target(f"cold recall vs upstream, {files:,} files", cold / naive, 0.5, "lower",
                   f"p50 {cold:.2f} vs {naive:.2f} ms"),
            target(f"warm recall via wrapper vs plain, {files:,} files", wrapped / warm, 1.1, "lower",
                   f"p50 {wrapped:.3f} vs {warm:.3f} ms")]


def print_recall_table(files: int, timings: Timings) -> None:
    stat, read, naive = (p50(timings[k]) for k in ("stat floor", "read floor", "naive upstream"))
    rounds = len(timings["stat floor"])
    print(f"\nrecall over {files:,} topic files (~4 KB), {rounds} interleaved rounds, milliseconds")
    print(f"{'contender':<17}{'min':>10}{'p50':>10}{'p95':>10}{'/ stat':>9}{'/ read':>9}{'/ naive':>9}")
    for name, samples in timings.items():
        mid = p50(samples)
        print(f"{name:<17}{min(samples):>10.3f}{mid:>10.3f}{p95(samples):>10.3f}{mid / stat:>9.2f}{mid / read:>9.2f}"
              f"{mid / naive:>9.3f}")
    warm, cold = p50(timings["recall warm"]), p50(timings["recall cold"])
    best = min(timings["recall warm"]) / min(timings["stat floor"])
    print(f"warm recall / stat floor {warm / stat:.2f} (target <= 2.5; {best:.2f} on the fastest runs); cold recall "
          f"{cold / naive:.2f}x naive upstream's time (target <= 0.5); warm {naive / warm:.0f}x faster; through the "
          f"harness's store wrapper warm recall takes {p50(timings['warm via wrapper']) / warm:.2f}x (target <= 1.1)")


def patches_for(n: int) -> list[Patch]:
    """``n`` patches on one topic; every tenth repeats an earlier summary (a merge)."""
    return [Patch("project", f"Release step {i if i % 10 else i // 2} uses the blue deploy lane", f"because {i}")
            for i in range(n)]


def _call(fn: Callable[..., object], *args: object, **kwargs: object) -> Callable[[int], object]:
    return lambda _round: fn(*args, **kwargs)


def slope(small: tuple[int, float], large: tuple[int, float]) -> float:
    return math.log(large[1] / small[1]) / math.log(large[0] / small[0])


def scaling(stores: dict[int, FileStore], recall_p50: dict[int, float], sizes: Sequence[int], rounds: int,
            patch_sizes: tuple[int, int], patch_budget_s: float) -> None:
    lo, hi = sizes[-2], sizes[-1]
    rows: list[tuple[str, tuple[int, float], tuple[int, float], str]] = [
        ("warm recall (files)", (lo, recall_p50[lo]), (hi, recall_p50[hi]), "")]
    docs = {n: dedupe_docs(n) for n in (lo, hi)}
    t = interleaved({str(n): _call(plan_dedupe, docs[n]) for n in (lo, hi)}, max(3, rounds // 4))
    rows.append(("dedupe planning (entries)", (lo, p50(t[str(lo)])), (hi, p50(t[str(hi)])), ""))
    caches = {n: DocCache() for n in (lo, hi)}
    for n in (lo, hi):
        rebuild_index(stores[n], cache=caches[n])
    t = interleaved({str(n): _call(rebuild_index, stores[n], cache=caches[n]) for n in (lo, hi)},
                    max(3, rounds // 4))
    rows.append(("index rebuild (files)", (lo, p50(t[str(lo)])), (hi, p50(t[str(hi)])), ""))
    small, large = patch_sizes
    note = ""
    small_ms = statistics.median(_apply_ms(small) for _ in range(3))
    if small_ms / 1000 * (large / small) ** 2 > patch_budget_s:  # quadratic would blow the budget: a decade lower
        note = f"sizes cut to fit {patch_budget_s:.0f} s"
        small, large, large_ms = max(2, small // 10), small, small_ms
        small_ms = statistics.median(_apply_ms(small) for _ in range(3))
    else:
        large_ms = statistics.median(_apply_ms(large) for _ in range(3 if small_ms * large / small < 2000 else 1))
    points = [(small, small_ms), (large, large_ms)]
    rows.append(("patch application (patches)", points[0], points[1], note))
    print("\nscaling: log-log slope of p50 (1 = linear, 2 = quadratic; target <= 1.15)")
    print(f"{'step':<29}{'sizes':>16}{'p50 ms':>22}{'slope':>8}")
    for name, a, b, extra in rows:
        sizes_text = f"{a[0]:,} -> {b[0]:,}"
        times = f"{a[1]:.2f} -> {b[1]:.2f}"
        print(f"{name:<29}{sizes_text:>16}{times:>22}{slope(a, b):>8.2f}  {extra}".rstrip())


def _apply_ms(n: int) -> float:
    store, patches = memory_store(), patches_for(n)
    gc.collect()
    t0 = time.perf_counter_ns()
    apply_patches(store, patches, [], now=NOW)
    return (time.perf_counter_ns() - t0) / 1e6


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="200,1000,10000", help="store sizes in topic files, comma-separated")
    parser.add_argument("--rounds", type=int, default=40, help="interleaved rounds at the smallest size")
    parser.add_argument("--patches", default="1000,10000", help="patch counts for the patch-application slope")
    parser.add_argument("--patch-budget", type=float, default=60.0, help="seconds allowed for the larger patch run")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, few rounds: checks the script works")
    parser.add_argument("--json", metavar="PATH", help="also write the targets' measurements there (bench_targets.py)")
    parser.add_argument("--no-scaling", action="store_true", help="recall tables only, no scaling slopes")
    args = parser.parse_args(argv)
    sizes = [30, 90] if args.quick else sorted(int(s) for s in args.sizes.split(","))
    rounds = 3 if args.quick else args.rounds
    patch_sizes = (10, 100) if args.quick else tuple(int(s) for s in args.patches.split(","))
    if len(sizes) < 2 or len(patch_sizes) != 2:
        parser.error("--sizes needs at least two sizes and --patches exactly two")
    recall_p50: dict[int, float] = {}
    targets: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        stores = {n: build_store(Path(tmp) / f"m{n}", n) for n in sizes}
        for n in sizes:
            scaled = max(5, round(rounds * sizes[0] / n)) if n > sizes[0] else rounds
            checks = 2 if args.quick else len(QUERIES) if n <= 1000 else 3
            timings = interleaved(recall_contenders(stores[n], checks=checks), scaled)
            print_recall_table(n, timings)
            targets += recall_targets(n, timings)
            recall_p50[n] = p50(timings["recall warm"])
        if not args.no_scaling:
            scaling(stores, recall_p50, sizes, rounds, (patch_sizes[0], patch_sizes[1]), args.patch_budget)
    write_json(args.json, "bench_recall.py", targets)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
