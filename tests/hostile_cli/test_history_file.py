"""Round 10 of the hostile-input trial: a damaged or hand-edited run history (``history.sqlite``).

Found by the tenth blind probe: a one-byte flip in the stored schema made SQLite's error message undecodable, so
``run`` died with ``internal error: UnicodeDecodeError`` before its run directory was written (and ``report`` and
``history`` did too); a readable history whose values had the wrong SQLite types (a blob commit, text where a metric's
number belongs) made ``history`` an internal error (``ValueError``, ``TypeError: bytes is not JSON serializable``).

Properties, generated: ``history`` (text and ``--json``) gives its table or one clean line naming the file, exit 2;
every value it shows has the type the history writes, and rows left out are said in one warning line; ``run`` always
writes its run directory and says at most one warning line about the history, and so does ``report``."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.evaluation import evaluate_run
from harness.replay import Probe, ScenarioResult
from harness.reporting import append_run
from tests.helpers import examples
from tests.hostile_cli._support import assert_one_line_error, cli

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "scenarios" / "recall" / "type-user.yaml"
SETTINGS = settings(max_examples=examples(100), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
RUN_COLUMNS = ("run_id", "created_at", "git_commit", "passed", "complete", "out_dir", "key")
METRIC_COLUMNS = ("run_id", "strategy", "metric", "value")
# SQL literals: the types the history writes, and every other type SQLite can hold (a blob, text that is not UTF-8)
WRONG = ("NULL", "x'00ff'", "x''", "CAST(x'ff80' AS TEXT)", "CAST(x'c3' AS TEXT)", "'abc'", "''", "'nan'", "1e999",
         "-1e999", "9223372036854775807", "-5", "2", "1.5", "0", "1", "'2026-01-01T00:00:00Z'", "'recall.f1'",
         "'heuristic'", "'\x1b[31mred'", "'a\nb'")
DECLARED = ("TEXT", "INTEGER", "REAL", "BLOB", "", "NUMERIC")


KEY = "reference | heuristic"
"""The key of every run here (the scenario's and the real history's): the run's trend reads these rows."""


@st.composite
def _wrong_typed(draw: st.DrawFn) -> list[str]:
    """The SQL of a history with the history's tables (their declared types drawn too) and rows whose values are
    drawn from every SQLite type; most rows hold at least one value of a type the history never writes."""
    def value(column: str) -> str:
        good = {"run_id": "'r'", "created_at": "'2026-01-01T00:00:00Z'", "git_commit": "'abc'", "passed": "1",
                "complete": "0", "out_dir": "''", "key": f"'{KEY}'", "strategy": "'heuristic'",
                "metric": "'recall.f1'", "value": "0.5"}[column]
        if column == "key" and draw(st.integers(0, 3)):  # mostly the run's key: its trend reads the row
            return good
        return draw(st.sampled_from((good, good, *WRONG)))

    sql = [f"CREATE TABLE runs ({', '.join(f'{c} {draw(st.sampled_from(DECLARED))}' for c in RUN_COLUMNS)})",
           f"CREATE TABLE metrics ({', '.join(f'{c} {draw(st.sampled_from(DECLARED))}' for c in METRIC_COLUMNS)})"]
    for n in range(draw(st.integers(1, 3))):
        run_id = f"'r{n}'" if draw(st.booleans()) else value("run_id")
        sql.append(f"INSERT INTO runs VALUES ({', '.join(run_id if c == 'run_id' else value(c) for c in RUN_COLUMNS)})")
        sql += [f"INSERT INTO metrics VALUES ({', '.join(run_id if c == 'run_id' else value(c) for c in METRIC_COLUMNS)})"
                for _ in range(draw(st.integers(0, 3)))]
    return sql


FLIPS = st.one_of(
    st.integers(0, 1 << 15).map(lambda cut: ("truncate", [(cut, 0, 0)])),
    st.lists(st.tuples(st.integers(-1, 7), st.integers(-24, 1 << 15), st.one_of(st.integers(0x80, 0xFF),
                                                                             st.integers(0, 0xFF))),
             min_size=1, max_size=4).map(lambda flips: ("flip", flips)))
"""A damage to a history file: truncated at a point, or a few bytes changed, most where they matter (``hot``)."""


def _damaged(base: bytes, damage: tuple[str, list[tuple[int, int, int]]]) -> bytes:
    """``base`` truncated, or with bytes changed: a flip ``(hot, offset, byte)`` with ``hot`` ≥ 0 lands near a hot
    spot (the stored schema's ``CREATE TABLE`` text, a row's record: its header bytes hold the values' types),
    offset -24 to 240 from it; with ``hot`` = -1, anywhere in the file."""
    kind, flips = damage
    if kind == "truncate":
        return base[:flips[0][0] % len(base)]
    hot = [i for marker in (b"CREATE TABLE", KEY.encode()) for i in _find_all(base, marker)]
    out = bytearray(base)
    for spot, offset, byte in flips:
        pos = hot[spot % len(hot)] + offset % 265 - 24 if spot >= 0 and hot else offset
        out[min(len(out) - 1, max(0, pos))] = byte
    return bytes(out)


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A history written by the history's own writer: three runs of the key the scenario's run has."""
    db = tmp_path_factory.mktemp("real-history") / "history.sqlite"
    for n in range(3):
        results = [ScenarioResult("s", "heuristic", True, (), (Probe("s", 0, "recall", "heuristic",
                                                                    metrics={"f1": n / 3}),), "t")]
        assert append_run(db, evaluate_run(results, ["heuristic"], run_id=f"run{n}", meta={"git_commit": f"{n}" * 40}),
                          out_dir=db.parent / f"run{n}")
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT DISTINCT key FROM runs").fetchall() == [(KEY,)]
    conn.close()
    return db  # a path: Hypothesis shows a failing example's arguments, 20 kB of bytes is too long a repr


def _find_all(data: bytes, marker: bytes) -> list[int]:
    found, at = [], data.find(marker)
    while at != -1:
        found.append(at)
        at = data.find(marker, at + 1)
    return found


def _check_history(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``history`` and ``history --json`` on ``db``: a clean table (rows left out said in one warning line) or one
    clean error line naming the file, exit 2; never an internal error or a traceback."""
    for extra in ([], ["--json"]):
        o = cli(["history", "--db", str(db), *extra], capsys)
        if o.code != 0:
            assert_one_line_error(o, mentions=(str(db), "cannot read the run history"), budget=30.0)
            continue
        lines = o.err.splitlines()
        assert len(lines) <= 1, o.err
        if lines:
            assert lines[0].startswith(f"memharness: warning: run history {db}: left out "), lines[0]
            assert lines[0].isprintable()
        if not extra:
            assert o.out.splitlines()[0].endswith(f" run(s) in {db} (oldest first)"), o.out
            assert "\x1b" not in o.out, o.out  # a value from the file is shown escaped, on its row's line
            continue
        for run in json.loads(o.out):
            assert all(isinstance(run[k], str) for k in ("run_id", "created_at", "git_commit")), run
            assert isinstance(run["passed"], bool), run
            assert isinstance(run["complete"], bool), run
            for metrics in run["metrics"].values():
                assert all(v is None or isinstance(v, float) for v in metrics.values()), run


@SETTINGS
@given(sql=_wrong_typed())
def test_history_with_wrong_typed_values_is_a_table_or_one_line(sql: list[str], tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Round 10: a blob commit or text in a metric's value was an internal error (ValueError, TypeError)."""
    db = tmp_path / f"{os.urandom(4).hex()}.sqlite"
    with sqlite3.connect(db) as conn:
        for statement in sql:
            conn.execute(statement)
    conn.close()
    _check_history(db, capsys)


@SETTINGS
@given(damage=FLIPS)
def test_history_with_flipped_bytes_is_a_table_or_one_line(damage: tuple[str, list[tuple[int, int, int]]],
                                                           real: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Round 10: a byte flipped in the stored schema was `internal error: UnicodeDecodeError`."""
    db = tmp_path / f"{os.urandom(4).hex()}.sqlite"
    db.write_bytes(_damaged(real.read_bytes(), damage))
    _check_history(db, capsys)


@settings(SETTINGS, max_examples=examples(100))
@given(history=st.one_of(_wrong_typed(), FLIPS))
def test_a_run_writes_its_directory_whatever_the_history(history: list[str] | tuple[str, list[tuple[int, int, int]]],
                                                         real: Path,
                                                         tmp_path_factory: pytest.TempPathFactory,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Round 10: a run whose history was damaged replayed, then died (internal error, exit 2) before writing its
    run directory. Now it writes it, exit 0, with at most one warning line about the history; `report` too."""
    root = tmp_path_factory.mktemp("run")
    db = root / "history.sqlite"
    if isinstance(history, list):
        with sqlite3.connect(db) as conn:
            for statement in history:
                conn.execute(statement)
        conn.close()
    else:
        db.write_bytes(_damaged(real.read_bytes(), history))
    out = root / "out"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEMHARNESS_HISTORY", str(db))
        for argv in (["run", str(SCENARIO), "--out", str(out), "--no-gates"], ["report", str(out)]):
            capsys.readouterr()
            code = main(argv, environ={})
            err = capsys.readouterr().err
            assert code == 0, (argv[0], err)
            assert "internal error" not in err, err
            assert "Traceback" not in err, err
            assert (out / "report.html").is_file()
            assert (out / "summary.json").is_file()
            warnings = [line for line in err.splitlines() if "warning: run history" in line]
            assert len(warnings) <= 1, err
            assert all(line.startswith(f"memharness: warning: run history {db}") and line.isprintable()
                       for line in warnings), warnings
