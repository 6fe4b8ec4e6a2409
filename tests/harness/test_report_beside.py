"""``--jobs N`` ≥ 2: a forked process writes ``report.html`` while the run writes its other files (issue 34's serial
tail). The files are the same bytes as one process writes; a forked writer that fails leaves the report to the run;
a run that fails meanwhile ends the forked writer."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import IO

import pytest

from harness.cli import main
from harness.replay import ResultSpool
from harness.reporting import read_run, report_chunks, write_run
from harness.reporting._beside import ASIDE, put_each
from harness.reporting._rundir import RUN_FILES, _put
from harness.reporting._traces import TraceSpool
from tests.harness.conftest import SCENARIOS
from tests.helpers import fresh_process_run

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the report is written beside only where fork is")


def _pid_writer(handle: IO[bytes]) -> None:
    handle.write(str(os.getpid()).encode())


def test_with_two_workers_the_report_is_written_by_another_process(tmp_path: Path) -> None:
    put_each(tmp_path, {"a.txt": _pid_writer, ASIDE: _pid_writer}, _put, workers=2)
    assert (tmp_path / "a.txt").read_text() == str(os.getpid())
    assert (tmp_path / ASIDE).read_text() != str(os.getpid())


def test_with_one_worker_every_file_is_written_here(tmp_path: Path) -> None:
    put_each(tmp_path, {"a.txt": _pid_writer, ASIDE: _pid_writer}, _put, workers=1)
    assert {p.read_text() for p in tmp_path.iterdir()} == {str(os.getpid())}


def test_a_forked_writer_that_fails_leaves_the_report_to_this_process(tmp_path: Path) -> None:
    me = os.getpid()

    def failing_elsewhere(handle: IO[bytes]) -> None:
        handle.write(b"half")
        if os.getpid() != me:
            raise MemoryError("the forked writer ran out")
        handle.write(b" and whole")

    put_each(tmp_path, {"a.txt": _pid_writer, ASIDE: failing_elsewhere}, _put, workers=2)
    assert (tmp_path / ASIDE).read_text() == "half and whole"


def test_a_failure_here_ends_the_forked_writer(tmp_path: Path) -> None:
    me = os.getpid()
    marker = tmp_path / "forked-pid"

    def slow_elsewhere(handle: IO[bytes]) -> None:
        if os.getpid() != me:
            marker.write_text(str(os.getpid()))
            time.sleep(60)

    def failing(handle: IO[bytes]) -> None:
        deadline = time.monotonic() + 20
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        raise KeyboardInterrupt  # as Ctrl-C arrives while the other files are written

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        put_each(tmp_path / "stage", {"a.txt": failing, ASIDE: slow_elsewhere},
                 lambda p, w: (p.parent.mkdir(exist_ok=True), _put(p, w))[1], workers=2)
    assert time.monotonic() - started < 30
    pid = int(marker.read_text())
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped: no zombie, no process left writing


def _files(out: Path) -> dict[str, bytes]:
    return {name: (out / name).read_bytes() for name in RUN_FILES}


@pytest.mark.parametrize("in_order", [True, False])
def test_a_run_directory_is_the_same_bytes_from_one_process_or_two(tmp_path: Path, in_order: bool) -> None:
    """Read back from spools by position in the forked writer while this process copies the traces: the shared
    file offset moves under neither."""
    source = tmp_path / "source"
    assert main(["run", str(SCENARIOS / "recall"), "--out", str(source), "--no-gates"],
                environ={"MEMHARNESS_RUN_ID": "beside"}) in (0, 1)
    summary, results, spans = read_run(source)
    got = {}
    for workers in (1, 2):
        traces = TraceSpool()
        places = range(len(spans)) if in_order else reversed(range(len(spans)))
        for place, request in zip(places, spans if in_order else reversed(spans), strict=True):
            traces.add([request], place)
        spool = ResultSpool(results)
        out = tmp_path / f"jobs-{workers}"
        write_run(out, summary=summary, results=spool, spans=traces,
                  html=report_chunks(summary, spool, traces), workers=workers)
        got[workers] = _files(out)
        traces.close()
        spool.close()
    assert got[1] == got[2]
    assert got[2]["report.html"].count(b'class="scenario"') == len(results) > 0
    assert got[2]["traces.jsonl"] == (source / "traces.jsonl").read_bytes()


@pytest.mark.slow
def test_a_jobs_two_run_directory_says_what_a_serial_one_says(tmp_path: Path) -> None:
    """The model scenarios (replayed from cassettes) in one process and with ``--jobs 2``: the same meta (the
    cassette's entry count was null under ``--jobs``), the same probes, a report of every scenario run."""
    env = {"MEMHARNESS_RUN_ID": "beside-jobs"}
    argv = ["run", str(SCENARIOS / "model"), "--no-gates"]
    assert main([*argv, "--out", str(tmp_path / "serial")], environ=env) in (0, 1)
    assert fresh_process_run([*argv, "--out", str(tmp_path / "jobs"), "--jobs", "2"], env) in (0, 1)
    metas = [json.loads((tmp_path / d / "summary.json").read_text())["meta"] for d in ("serial", "jobs")]
    for meta in metas:
        meta.pop("jobs")
        meta.pop("created_at", None)
    assert metas[0] == metas[1]
    assert metas[1]["cassette_entries"] > 0
    rows = [sorted(json.dumps({k: v for k, v in json.loads(line).items() if k != "duration_ms"}, sort_keys=True)
                   for line in (tmp_path / d / "probes.jsonl").read_text().splitlines()) for d in ("serial", "jobs")]
    assert rows[0] == rows[1]
    sections = {(tmp_path / d / "report.html").read_bytes().count(b'class="scenario"') for d in ("serial", "jobs")}
    assert sections == {len((tmp_path / "jobs" / "results.jsonl").read_text().splitlines())}
