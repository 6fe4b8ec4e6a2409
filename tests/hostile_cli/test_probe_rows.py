"""A run directory's ``probes.jsonl`` with a row written twice, or with a row of no result (hostile probe, round 11).

Before: ``report``, ``compare`` and ``merge`` read both silently — a duplicated probe was paired and counted twice by
``compare`` and copied into the merged run by ``merge`` (90 generated duplicates: all accepted), and a probe whose
scenario and column have no row in ``results.jsonl`` was read and dropped without a word. A run writes one probe per
scenario, column, step and kind (the shipped suite's 2,864 probes: no two share them). Now each is one located line,
``memharness: <run>/probes.jsonl:<line>: …``, naming the line of the second copy (and the first), exit 2.
Generated: which row, where the copy goes, how it is re-serialised (key order, spacing), or which scenario or
column a row is moved to."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from tests.helpers import examples
from tests.hostile_cli.test_run_dir_mutations import _shards


def _rows(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").split("\n") if line]


def copied_shard(factory: pytest.TempPathFactory, tmp_path: Path) -> tuple[Path, Path, Path]:
    """The two shards of ``_shards`` and a fresh copy of the first, for one example to damage."""
    base, other = _shards(factory)
    run = tmp_path / f"run-{os.urandom(4).hex()}"
    shutil.copytree(base, run)
    return base, other, run


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str], env: dict[str, str], expected: str) -> None:
    capsys.readouterr()
    assert main(argv, environ=env) == 2, argv
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert expected in err, (expected, err)
    assert "internal error" not in err, err


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), how=st.sampled_from(["duplicate", "orphan-scenario", "orphan-strategy"]))
def test_a_probe_row_twice_or_of_no_result_is_one_located_line(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        data: st.DataObject, how: str) -> None:
    base, other, run = copied_shard(tmp_path_factory, tmp_path)
    path = run / "probes.jsonl"
    rows = _rows(path)
    n = data.draw(st.integers(0, len(rows) - 1), label="row")
    row = json.loads(rows[n])
    if how == "duplicate":
        keys = data.draw(st.permutations(sorted(row)), label="key order")
        copy = json.dumps({k: row[k] for k in keys}, separators=data.draw(st.sampled_from([(",", ":"), (", ", ": ")])))
        at = data.draw(st.integers(0, len(rows)), label="copy at")
        rows.insert(at, copy)
        first, second = (at + 1, n + 2) if at <= n else (n + 1, at + 1)
        expected = f"probes.jsonl:{second}: step: {row['scenario']} [{row['strategy']}] step {row['step']} " \
                   f"({row['kind']}) is also on line {first}"
    else:
        results = {(r["scenario"], r["strategy"]) for r in map(json.loads, _rows(run / "results.jsonl"))}
        if how == "orphan-scenario":
            row["scenario"] = data.draw(st.text("abcdefgh-/", min_size=1, max_size=12).filter(
                lambda s: all(s != scenario for scenario, _ in results)), label="scenario")
        else:
            summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
            row["strategy"] = next((s for s in summary["strategies"] if (row["scenario"], s) not in results), "nope")
        assert (row["scenario"], row["strategy"]) not in results
        rows[n] = json.dumps(row)
        expected = f"probes.jsonl:{n + 1}: scenario: {row['scenario']} [{row['strategy']}] has no row in "
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    env = {"MEMHARNESS_HISTORY": str(tmp_path / "history.sqlite")}
    _refused(capsys, ["report", str(run), "--output", str(tmp_path / f"{run.name}.html")], env, expected)
    _refused(capsys, ["compare", str(base), str(run)], env, expected)
    _refused(capsys, ["compare", str(run), str(base)], env, expected)
    merged = tmp_path / f"{run.name}-merged"
    _refused(capsys, ["merge", str(merged), str(run), str(other)], env, expected)
    assert not merged.exists()  # nothing half-written
