"""Whether two runs' ``traces.jsonl`` hold the same spans, times aside (issue 34: the span recorder must not change
what a run exports).

    .venv/bin/python bench/compare_traces.py RUN_A/traces.jsonl RUN_B/traces.jsonl

Every span is keyed by trace and span id and compared with its resource and scope: name, kind, parent, attributes,
events, status, dropped counts. Start, end and event times are removed, and so are the attribute that measures
time (``memory.duration_ms``: wall-clock), the resource's ``service.instance.id`` (random per process) and the
random part of a scenario's work directory (``memharness-XXXXXXXX``, named in some error messages). Prints the
differences (at most ``--show``) and exits 1 when there is one.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

TIMED = ("TimeUnixNano", "timeUnixNano")
TIMED_ATTRIBUTES = frozenset({"memory.duration_ms", "service.instance.id"})
"""Wall-clock durations, and the random id the SDK gives every process's resource."""
WORK_DIR = re.compile(r"memharness-[A-Za-z0-9_]{8}")


def _attributes(items: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(a["key"], "<time>" if a["key"] in TIMED_ATTRIBUTES else json.dumps(a.get("value"), sort_keys=True))
            for a in items]


def normalised(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Span (trace id, span id) -> the span without its times, with its resource and scope."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        for rs in json.loads(line).get("resourceSpans", ()):
            resource = _attributes(rs.get("resource", {}).get("attributes", []))
            for ss in rs.get("scopeSpans", ()):
                scope = json.dumps(ss.get("scope", {}), sort_keys=True)
                for span in ss.get("spans", ()):
                    kept = {k: v for k, v in span.items() if not k.endswith(TIMED)}
                    kept["attributes"] = _attributes(span.get("attributes", []))
                    kept["events"] = [{**{k: v for k, v in e.items() if not k.endswith(TIMED)},
                                       "attributes": _attributes(e.get("attributes", []))}
                                      for e in span.get("events", ())]
                    key = (span["traceId"], span["spanId"])
                    if key in out:
                        kept["duplicate"] = True
                    out[key] = json.loads(WORK_DIR.sub("memharness-<tmp>", json.dumps(
                        {"resource": resource, "scope": scope, "span": kept})))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--show", type=int, default=10, help="differences printed at most")
    args = parser.parse_args(argv)
    a, b = normalised(args.a), normalised(args.b)
    problems = [f"only in {args.a}: {k}" for k in sorted(a.keys() - b.keys())]
    problems += [f"only in {args.b}: {k}" for k in sorted(b.keys() - a.keys())]
    for key in sorted(a.keys() & b.keys()):
        if a[key] != b[key]:
            problems.append(f"differs {key}:\n  {json.dumps(a[key], sort_keys=True)}\n  {json.dumps(b[key], sort_keys=True)}")
    print(f"{len(a)} spans vs {len(b)} spans; {len(problems)} differences (times removed)")
    for problem in problems[:args.show]:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
