"""Whether two run directories hold the same outcome: ``probes.jsonl``, ``results.jsonl`` and ``summary.json``
compared with durations, timestamps, temporary paths and the checkouts' own paths removed (issue 34's "behaviour
unchanged: probes identical before/after, except durations").

    .venv/bin/python bench/same_run.py BEFORE_RUN AFTER_RUN [CHECKOUT ...]

Run both with the same ``MEMHARNESS_RUN_ID`` so their trace ids agree; name the checkouts the two runs came from
(their paths appear in ``summary.json``'s meta). Exit 0 when nothing else differs, 1 otherwise.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

DROP = {"duration_ms", "system_ms", "created_at", "git_commit", "latency.recall_ms.p50", "latency.recall_ms.p95",
        "harness.system_ms", "harness.overhead_ms", "python", "platform"}


def clean(x: Any, roots: list[str]) -> Any:
    if isinstance(x, str):
        x = re.sub(r"/tmp/memharness-[A-Za-z0-9_]+", "/tmp/memharness-X", x)
        for root in roots:
            x = x.replace(root, "<checkout>")
        return x
    if isinstance(x, dict):
        return {k: clean(v, roots) for k, v in x.items() if k not in DROP}
    if isinstance(x, list):
        return [clean(v, roots) for v in x]
    return x


def differences(x: Any, y: Any, path: str = "") -> list[str]:
    if isinstance(x, dict) and isinstance(y, dict):
        return [d for k in sorted(set(x) | set(y)) for d in differences(x.get(k), y.get(k), f"{path}.{k}")]
    if isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        return [d for i, (u, v) in enumerate(zip(x, y, strict=True)) for d in differences(u, v, f"{path}[{i}]")]
    return [] if x == y else [f"{path}: {json.dumps(x)[:100]} -> {json.dumps(y)[:100]}"]


def main() -> int:
    a, b, roots = Path(sys.argv[1]), Path(sys.argv[2]), sorted(sys.argv[3:], key=len, reverse=True)
    bad = 0
    for name in ("probes.jsonl", "results.jsonl"):
        rows = [[clean(json.loads(line), roots) for line in (run / name).read_text(encoding="utf-8").split("\n")
                 if line.strip()] for run in (a, b)]
        diffs = [(i, d) for i, (x, y) in enumerate(zip(*rows, strict=False)) for d in differences(x, y)]
        print(f"{name}: {len(rows[0])} vs {len(rows[1])} rows, {len({i for i, _ in diffs})} differ")
        for i, d in diffs[:5]:
            print(f"  line {i + 1} {d}")
        bad += len(diffs) + (len(rows[0]) != len(rows[1]))
    summaries = [clean(json.loads((run / "summary.json").read_text(encoding="utf-8")), roots) for run in (a, b)]
    diffs = differences(*summaries)
    for d in diffs[:20]:
        print(f"  summary.json {d}")
    bad += len(diffs)
    print("the same (durations, timestamps and paths aside)" if not bad else f"{bad} difference(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
