"""Rows traded between two columns of one scenario (round 20).

Round 19 checked each results row against its trace's scenario: rows swapped between scenarios are a located line.
Two rows of one scenario (``heuristic`` and ``model``, or ``heuristic`` and ``heuristic@sqlite``) that traded every
field but their column names still read back as written: the report showed the model's numbers under the heuristic
and the other way round. Each row's trace also says which column ran it: the ``scenario`` span's
``memory.scenario.strategy``, and ``memory.system`` when the column is another system's (``<strategy>@<system>``).
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from tests.harness.conftest import SCENARIOS
from tests.helpers import examples
from tests.hostile_cli._support import LOCATED, cli

SETTINGS = settings(max_examples=examples(24), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
RUN = (SCENARIOS / "recall" / "multi-fact.yaml", SCENARIOS / "recall" / "models-01-payments.yaml",
       SCENARIOS / "model" / "dream-consolidation.yaml")
"""Columns heuristic + heuristic@sqlite, heuristic + model, model + model@sqlite."""


@pytest.fixture(scope="module")
def columns_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run") / "columns"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(["run", *map(str, RUN), "--out", str(out), "--no-gates"], environ={})
    assert code == 0
    return out


def _rows(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@SETTINGS
@given(scenario=st.integers(0, len(RUN) - 1),
       keep=st.sets(st.sampled_from(["description", "path", "duration_ms", "tags", "failures", "passed", "probe_kinds",
                                     "prompt_versions", "system_ms"])),
       sums=st.booleans())
def test_rows_traded_between_columns_are_a_located_line(scenario: int, keep: set[str], sums: bool, columns_run: Path,
                                                        tmp_path_factory: pytest.TempPathFactory,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Two columns of one scenario trade every field but their column names (``keep``: and these), in place: refused
    at the first of the two rows, by ``report`` and ``compare`` alike (or at the summary, when a sum of the rows it
    states moved with them: ``sums`` keeps the times in place, so that only the trace can tell)."""
    keep = keep | ({"system_ms", "duration_ms"} if sums else set())
    run = tmp_path_factory.mktemp("traded") / "run"
    shutil.copytree(columns_run, run)
    results = _rows(run / "results.jsonl")
    name = RUN[scenario].stem
    at = [i for i, r in enumerate(results) if r["scenario"] == name]
    assert len(at) == 2, at
    a, b = (results[i] for i in at)
    assert a["strategy"] != b["strategy"]
    for k in [k for k in a if k not in ("scenario", "strategy", *keep)]:
        a[k], b[k] = b[k], a[k]
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results), encoding="utf-8")
    for args in (["report", str(run), "-o", str(run / "r.html")], ["compare", str(columns_run), str(run)]):
        o = cli(args, capsys)
        assert o.code == 2, (o.code, o.out[-300:], o.err)
        (line,) = o.err.splitlines()
        match = LOCATED.match(line)
        assert match, line
        if not {"system_ms", "duration_ms"} <= keep:  # the summary's sums of the rows' times are read first
            assert match["file"] in (str(run / "results.jsonl"), str(run / "summary.json")), line
        else:
            assert (match["file"], match["line"]) == (str(run / "results.jsonl"), str(min(at) + 1)), line
        assert "since the run" in match["what"], line


def test_every_column_of_a_run_over_two_systems_reads_back(columns_run: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """The other side: an untouched run whose columns are the reference's bare names and the SQLite system's
    ``<strategy>@sqlite`` reads back (the span of the primary system's columns names no system)."""
    strategies = {str(r["strategy"]) for r in _rows(columns_run / "results.jsonl")}
    assert strategies == {"heuristic", "model", "heuristic@sqlite", "model@sqlite"}
    o = cli(["report", str(columns_run), "-o", str(columns_run.parent / "again.html")], capsys)
    assert (o.code, o.err) == (0, ""), o.err
