"""A run's results go to a spool on disk as each scenario finishes (issue 34: a run's memory must not grow with its
suite): what the spool gives back — in order, by position, sorted, through every reader of a run — is exactly what
the list of results gave, whatever order scenarios finished in, and it holds a few integers a result."""

from __future__ import annotations

import gc
import io
import os
import resource
import signal
import subprocess
import sys
import tracemalloc
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from harness.evaluation import evaluate_run
from harness.replay import ResultSpool, ScenarioResult, sorted_results
from harness.reporting import TraceSpool, junit_xml, render_report, write_run
from tests.harness.test_evaluation_reporting import _recall, _result

REPO = Path(__file__).resolve().parents[2]
STRATEGIES = ["heuristic", "model", "heuristic@sqlite"]


def _summary(results: Any, strategies: list[str]) -> dict[str, Any]:
    whole = evaluate_run(results, strategies, run_id="r").to_dict()
    return {k: v for k, v in whole.items() if k != "created_at"}


@st.composite
def finished(draw: Any) -> list[tuple[int, list[ScenarioResult]]]:
    """(place, that scenario's results) in the order scenarios finished: a random order of places 0..n-1."""
    n = draw(st.integers(0, 12))
    out = []
    for place in range(n):
        strategies = draw(st.lists(st.sampled_from(STRATEGIES), max_size=3, unique=True))
        results = []
        for s in strategies:
            probes = tuple(_recall(f"s{place}", k, s, draw(st.sampled_from([0.0, 0.5, 1.0])), draw(st.sampled_from([0.0, 1.0])))
                           for k in range(draw(st.integers(0, 3))))
            results.append(_result(f"s{place}", s, probes, failures=draw(st.sampled_from([(), ("it failed",)]))))
        out.append((place, results))
    return draw(st.permutations(out))


LATE_BETWEEN = [(p, [_result(f"s{p}", "heuristic", ())]) for p in (2, 0, 1)]
"""Out of order, read (sorted), then a place between two held ones: appended to the sorted order, it read back last."""


@settings(max_examples=200, deadline=None)
@given(arrivals=finished(), placed=st.booleans())
@example(arrivals=LATE_BETWEEN, placed=True)
def test_the_spool_reads_back_in_place_order_whatever_order_results_came_in(
        arrivals: list[tuple[int, list[ScenarioResult]]], placed: bool) -> None:
    in_order = [r for _, out in sorted(arrivals, key=lambda a: a[0]) for r in out]
    spool = ResultSpool()
    try:
        for n, (place, out) in enumerate(arrivals if placed else sorted(arrivals, key=lambda a: a[0])):
            spool.add(out, place=place if placed else None)
            if n % 3 == 1:  # a read between adds (a progress line, a reader mid-run) keeps the order right after
                so_far = sorted((a for a in arrivals[:n + 1]) if placed else sorted(arrivals)[:n + 1],
                                key=lambda a: a[0])
                assert list(spool) == [r for _, o in so_far for r in o]
        assert list(spool) == in_order
        assert len(spool) == len(in_order)
        assert [spool[i] for i in range(len(spool))] == in_order
        assert [spool[i] for i in range(-len(spool), 0)] == in_order
        assert spool[1:-1:2] == in_order[1:-1:2]
        def key(r: ScenarioResult) -> tuple[str, str, str]:
            return (r.status, r.scenario, r.strategy)

        assert list(sorted_results(spool, key)) == sorted(in_order, key=key)
        view = sorted_results(spool, key)
        assert [view[i] for i in range(len(view))] == sorted(in_order, key=key)
        assert _summary(spool, STRATEGIES) == _summary(in_order, STRATEGIES)
    finally:
        spool.close()


def test_a_second_suite_reads_back_after_the_first(tmp_path: Path) -> None:
    """``next_place``: where ``run_plan``'s next system begins, whatever places the first used."""
    spool = ResultSpool()
    first = [_result("b", "heuristic", ()), _result("a", "heuristic", ())]
    spool.add(first[1:], place=1)
    spool.add(first[:1], place=0)
    second = [_result("a", "heuristic@sqlite", ())]
    spool.add(second, place=spool.next_place)
    assert list(spool) == [*first, *second]
    spool.close()


def test_a_run_written_from_a_spool_equals_one_written_from_the_list(tmp_path: Path) -> None:
    results = [_result(f"s{i}", s, (_recall(f"s{i}", 0, s, 0.5 * (i % 3), 1.0 if i % 2 else 0.0),),
                       failures=("no",) if i == 3 else ()) for i in range(8) for s in ("heuristic", "model")]
    summary = evaluate_run(results, ["heuristic", "model"], run_id="r")
    spool = ResultSpool(results)
    try:
        assert _summary(spool, ["heuristic", "model"]) == _summary(results, ["heuristic", "model"])
        write_run(tmp_path / "spooled", summary=summary, results=spool, spans=[], html=render_report(summary, spool, []))
    finally:
        spool.close()
    write_run(tmp_path / "listed", summary=summary, results=results, spans=[], html=render_report(summary, results, []))
    for name in ("report.html", "probes.jsonl", "results.jsonl", "junit.xml", "summary.md", "summary.json"):
        assert (tmp_path / "spooled" / name).read_bytes() == (tmp_path / "listed" / name).read_bytes(), name


def test_the_spool_holds_a_few_integers_a_result_and_leaves_no_file() -> None:
    big = _result("s", "heuristic", tuple(_recall("s", k, "heuristic", 0.5, 1.0, query="q" * 2000) for k in range(20)))
    spool = ResultSpool()
    try:
        assert not os.path.exists(spool.path)  # unlinked at once: a killed run leaves nothing in /tmp
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(300):
            spool.add([big])
        gc.collect()  # what pickling left for the collector is not held
        held = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        assert held < 300 * 100  # 3 integers a result (~35 B here); a list of these results would hold ~45 KB each
        assert len(spool) == 300
        assert spool[299] == big
    finally:
        spool.close()


def test_traces_added_out_of_order_are_written_in_place_order() -> None:
    lines = [{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": f"{i:032x}", "spanId": f"{i:016x}",
                                                             "name": f"n{i}"}]}]}]} for i in range(6)]
    spool = TraceSpool()
    try:
        for place in (3, 0, 5, 1, 2, 4):
            spool.add([lines[place]], place=place)
        out = io.BytesIO()
        spool.copy_to(out)
        assert [orjson.loads(line) for line in out.getvalue().splitlines()] == lines
        assert list(spool) == lines
        assert spool.spans(f"{4:032x}")[0]["name"] == "n4"
    finally:
        spool.close()


@pytest.mark.parametrize("limit", [20_000, 60_000, 200_000])
def test_a_spool_the_os_refuses_to_grow_is_one_line_naming_it(limit: int, tmp_path: Path) -> None:
    """A full ``TMPDIR`` (here: a file-size limit) while a run spools its results or traces: one line naming the
    spool's file and TMPDIR, exit 2, no traceback (it said only "File too large", naming nothing)."""
    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = subprocess.run([sys.executable, "-m", "harness", "run", str(REPO / "scenarios" / "recall"), "--out",
                           str(tmp_path / "o"), "--no-gates"], preexec_fn=limited, capture_output=True, text=True,
                          cwd=tmp_path, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": str(tmp_path)},
                          check=False, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"memharness: {tmp_path}/memharness-"), last
    assert "(a run's spool: TMPDIR names where it goes)" in last


@settings(max_examples=60, deadline=None)
@given(arrivals=finished())
def test_each_junit_suite_holds_its_own_strategys_cases_in_order(arrivals: list[tuple[int, list[ScenarioResult]]]) -> None:
    """``junit.xml`` written from a spool in one pass per strategy: each ``memharness.<column>`` suite holds that
    column's results, in run order, as many as its ``tests`` says. (The first streaming writer filtered every
    suite by the loop's last column, bound late: the slow tier's default run had 374 cases for 550.)"""
    results = [r for _, out in sorted(arrivals, key=lambda a: a[0]) for r in out]
    spool = ResultSpool(results)
    try:
        root = ET.fromstring(junit_xml(spool).encode())
    finally:
        spool.close()
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {f"memharness.{r.strategy}" for r in results}
    for name, suite in suites.items():
        mine = [r for r in results if f"memharness.{r.strategy}" == name]
        cases = suite.findall("testcase")
        assert [c.get("name") for c in cases] == [r.scenario for r in mine]
        assert {c.get("classname") for c in cases} <= {name}
        assert int(suite.get("tests", "-1")) == len(mine)
        assert int(suite.get("failures", "-1")) == sum(r.status == "failed" for r in mine)
