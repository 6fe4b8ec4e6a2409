"""On-demand benchmarks for the memory core and the harness (not part of the test suite).

    .venv/bin/python bench/bench_core.py [--docs 200] [--repeat 20]

Prints wall-clock numbers and the ratios that matter: scan with the (path, mtime, size) cache vs without,
per-strategy recall latency, and scenario replay throughput. Machines here are shared and noisy: compare ratios,
and run twice.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from memory_core.clock import FixedClock
from memory_core.files.entries import Entry, render_entries
from memory_core.files.rankers import BM25Ranker
from memory_core.files.recall import select_heuristic
from memory_core.files.scan import DocCache, scan
from memory_core.files.store import FileStore
from memory_core.files.topic import MEMORY_TYPES, render_topic

WORDS = ("deploy", "review", "terse", "grafana", "freeze", "python", "vim", "oncall", "budget", "release", "lint",
         "docker", "postgres", "pagerduty", "squash", "sign", "commit", "cache", "index", "memory")


def _timed(fn: Callable[[], object], repeat: int) -> float:
    """Median milliseconds over ``repeat`` runs."""
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    clock = FixedClock(datetime(2026, 3, 2, 9, tzinfo=UTC))
    with tempfile.TemporaryDirectory() as tmp:
        store = FileStore(Path(tmp) / "memory", clock)
        for i in range(args.docs):
            kind = MEMORY_TYPES[i % 4]
            words = " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(12))
            body = render_entries([Entry(f"fact {i}: {words}", f"because {i}"), Entry(f"detail {i} {words[:30]}")])
            store.write(f"{kind}/doc-{i:04d}.md", render_topic(name=f"Doc {i}", description=words[:60], kind=kind,
                                                               body=body))
        cold = _timed(lambda: scan(store), args.repeat)
        cache = DocCache()
        scan(store, cache=cache)
        warm = _timed(lambda: scan(store, cache=cache), args.repeat)
        print(f"scan of {args.docs} topic files: {cold:.2f} ms uncached, {warm:.2f} ms cached "
              f"(ratio {cold / warm:.1f}x)")
        docs = list(scan(store).docs)
        query = "who is oncall for the postgres release freeze"
        heuristic = _timed(lambda: select_heuristic(query, docs, limit=5), args.repeat)
        bm25 = _timed(lambda: BM25Ranker().rank(query, docs, limit=5), args.repeat)
        print(f"recall over {len(docs)} docs: heuristic {heuristic:.2f} ms, bm25 {bm25:.2f} ms "
              f"(bm25 / heuristic {bm25 / heuristic:.1f}x)")
    from harness.replay import replay
    from harness.scenario import load_all
    from harness.telemetry import build_telemetry

    scenarios = load_all([Path(__file__).resolve().parents[1] / "scenarios"])
    telemetry = build_telemetry({}).telemetry
    t0 = time.perf_counter()
    runs = 0
    for s in scenarios:
        if (not s.strategies or "heuristic" in s.strategies) and (not s.systems or "reference" in s.systems):
            replay(s, strategy="heuristic", telemetry=telemetry)
            runs += 1
    elapsed = time.perf_counter() - t0
    print(f"replay: {runs} shipped scenarios (heuristic) in {elapsed:.2f} s, {runs / elapsed:.1f} scenarios/s")


if __name__ == "__main__":
    main()
