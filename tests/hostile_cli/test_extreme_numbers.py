"""Run files whose numbers are of the right type but extreme (hostile probe, round 12): a ``step`` of 10**30 in
``probes.jsonl`` passed the type check (an int) and ended ``compare`` and ``merge`` in ``internal error:
OverflowError`` (the probe frame's int64 column); an ``f1`` of 1e308 or ``Infinity`` made a mean infinite and
``report`` an internal error (JSON cannot hold it). Generated: numbers of a real run's files replaced by extreme
ones; each command reads them or refuses them in one located line, exit 2.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness.conftest import SCENARIOS
from tests.hostile_cli._support import LOCATED, cli, set_at

EXTREME = [1e308, -1e308, 5e-324, float("inf"), float("-inf"), 2**53 + 1, 10**18, 10**30, -10**30, 2**63, -0.0,
           9.999999999999999e307]


def _numbers(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield path
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _numbers(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _numbers(v, (*path, i))


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from harness.cli import main

    out = tmp_path_factory.mktemp("run") / "run"
    assert main(["run", str(SCENARIOS / "recall" / "multi-fact.yaml"), str(SCENARIOS / "forget"), "--strategy",
                 "heuristic,bm25", "--system", "reference", "--no-gates", "--out", str(out)], environ={}) == 0
    return out


def test_extreme_numbers_are_read_or_refused_in_one_located_line(run: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(12)
    bad = []
    for case in range(120):
        tampered = tmp_path / f"t{case % 2}"
        shutil.rmtree(tampered, ignore_errors=True)
        shutil.copytree(run, tampered)
        name = rng.choice(["summary.json", "probes.jsonl", "probes.jsonl", "results.jsonl"])
        file = tampered / name
        if name == "summary.json":
            data = json.loads(file.read_text())
            for _ in range(rng.randrange(1, 4)):
                set_at(data, rng.choice(list(_numbers(data))), rng.choice(EXTREME))
            file.write_text(json.dumps(data, indent=2))
        else:
            rows = [json.loads(line) for line in file.read_text().splitlines()]
            for _ in range(rng.randrange(1, 6)):
                row = rng.choice(rows)
                if paths := list(_numbers(row)):
                    set_at(row, rng.choice(paths), rng.choice(EXTREME))
            file.write_text("".join(json.dumps(r) + "\n" for r in rows))
        merged = tmp_path / f"m{case}"
        args = rng.choice([["report", str(tampered), "-o", str(tmp_path / "r.html")], ["compare", str(run), str(tampered)],
                           ["compare", str(tampered), str(run)], ["merge", str(merged), str(tampered)]])
        o = cli(args, capsys)
        lines = o.err.splitlines()
        located = len(lines) == 1 and LOCATED.match(lines[0])
        if "internal error" in o.err or "Traceback" in o.err or (o.code == 2 and not located):
            bad.append((case, name, args[0], o.err[-200:]))
    assert not bad, f"{len(bad)} of 120: {bad[:3]}"
