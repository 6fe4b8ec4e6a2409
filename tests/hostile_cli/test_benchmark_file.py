"""``memharness run --benchmark FILE`` with generated variants of a benchmark file (hostile probe, round 12).

On the old code only "a JSON object" was checked: of 150 variants of a real ``benchmark.json`` (a value replaced
by another JSON value, a key dropped), 60 ended the run after its whole replay in ``internal error`` (jinja's
UndefinedError, ``format`` of a text delta) and the rest were accepted whatever they held. Now a variant is either
shown (the report renders it) or refused before any replay as one ``<file>:<line>: <field>: …`` line.
"""

from __future__ import annotations

import copy
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from harness.cli._report_cmds import read_benchmark
from harness.errors import HarnessError
from harness.reporting import render_benchmark
from tests.hostile_cli._support import cli

ROW = {"n": 2, "R@5": 50.0, "R@10": 100.0, "hit@5": 50.0, "hit@10": 100.0, "MRR": 75.0}
COMPARISON = {"a": "heuristic", "b": "bm25", "metric": "locomo.r10", "n": 4, "mean_a": 1.0, "mean_b": 0.5,
              "delta": -0.5, "ci95": [-1.0, 0.0], "p_value": 0.25, "wins": 0, "ties": 2, "losses": 2,
              "mcnemar_b": 2, "mcnemar_c": 0, "mcnemar_p": 0.5, "mde": 1.2}
BENCH = {"dataset": "locomo10.json", "mode": "turns", "questions": 6, "scored": 4, "dropped_evidence_ids": [],
         "strategies": {s: {"table": {"temporal": ROW, "overall 1-4": ROW}, "seconds": 0.1, "peak_rss_mb": 0.0}
                        for s in ("heuristic", "bm25")},
         "comparisons": [COMPARISON, {**COMPARISON, "metric": "locomo.rr"}],
         "calibration": {"bm25 (dataset README)": {"R@5": 50.0, "R@10": 56.5}},
         "per_question": {"heuristic": [{"id": "q1", "r10": 1.0}]}}
JUNK = [None, True, False, "x", 5, -1, -1.5, 1e308, float("nan"), float("inf"), [], {}, [1, "a"], {"a": 1},
        "<script>", 2**70]


def _variant(rng: random.Random) -> Any:
    data: Any = copy.deepcopy(BENCH)
    for _ in range(rng.randrange(1, 4)):
        node, path = data, []
        while isinstance(node, (dict, list)) and node and rng.random() < 0.75:
            key = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
            path.append(key)
            node = node[key]
        if not path:
            continue
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        if isinstance(parent, dict) and rng.random() < 0.3:
            del parent[path[-1]]
        else:
            parent[path[-1]] = copy.deepcopy(rng.choice(JUNK))
    return data


LOCATED = re.compile(r"^\S+bench\.json:\d+: [^:]+: (missing|expected .+)")


def test_every_variant_is_shown_or_refused_in_one_located_line(tmp_path: Path) -> None:
    rng = random.Random(12)
    path = tmp_path / "bench.json"
    for case in range(600):
        data = _variant(rng)
        path.write_text(json.dumps(data, indent=1) if case % 2 else json.dumps(data))
        try:
            bench = read_benchmark(path)
        except HarnessError as exc:
            refused = str(exc)
        else:
            refused = ""
            assert "<td>" in render_benchmark(bench), case  # what is accepted renders
        assert not refused or LOCATED.match(refused), (case, refused)


def test_a_wrong_file_is_refused_before_any_replay(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({**BENCH, "strategies": [1]}, indent=1))
    out = tmp_path / "out"
    o = cli(["run", "scenarios/recall/multi-fact.yaml", "--strategy", "heuristic", "--no-gates", "--benchmark",
             str(bench), "--out", str(out)], capsys)
    assert o.code == 2
    assert o.err == f"memharness: {bench}:7: strategies: expected an object, got [1] (not a benchmark file of " \
                    "`memharness bench`?)\n"
    assert not out.exists()
