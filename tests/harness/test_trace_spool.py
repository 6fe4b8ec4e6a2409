"""The run's traces go to a spool on disk as scenarios finish (issue 34: a run's memory must not grow with its spans):
what the spool gives back — ``traces.jsonl``, each trace's waterfall, the recall candidate counts — is exactly what
the whole in-memory list gave."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.evaluation import evaluate_run
from harness.reporting import TraceSpool, flatten_spans, read_run, render_report, write_run
from harness.reporting import _charts as charts
from harness.reporting._traces import Waterfalls
from harness.telemetry import EncodedTrace, candidate_counts, otlp_jsonl

TRACES = st.sampled_from(["a" * 32, "b" * 32, "c" * 32, ""])


@st.composite
def requests(draw: Any) -> list[dict[str, Any]]:
    """OTLP-JSON requests as ``traces.jsonl`` holds them: usually one trace per line, but also several per line, a
    trace spread over lines that are not adjacent (older runs wrote one span per line), odd text and no spans."""
    out = []
    for _ in range(draw(st.integers(0, 6))):
        spans = []
        for k in range(draw(st.integers(0, 4))):
            start = draw(st.integers(0, 10**12))
            attrs = [{"key": "memory.step", "value": {"intValue": str(draw(st.integers(0, 3)))}}]
            if draw(st.booleans()):
                attrs.append({"key": "memory.recall.candidates", "value": {"intValue": str(draw(st.integers(0, 99)))}})
            spans.append({"traceId": draw(TRACES), "spanId": f"{len(out):08x}{k:08x}",
                          "name": draw(st.text(max_size=12)), "startTimeUnixNano": str(start),
                          "endTimeUnixNano": str(start + draw(st.integers(0, 10**9))), "attributes": attrs})
        out.append({"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]})
    return out


@settings(max_examples=60, deadline=None)
@given(batches=st.lists(st.tuples(requests(), st.booleans()), max_size=4))
def test_the_spool_gives_back_what_the_list_gave(batches: list[tuple[list[dict[str, Any]], bool]]) -> None:
    """Whether a batch arrives as requests (a serial run) or encoded by a ``--jobs`` worker, the spool is the same."""
    lines = [r for batch, _ in batches for r in batch]
    spool = TraceSpool()
    try:
        for batch, encoded in batches:  # as a run adds them: one scenario's requests at a time
            spool.add([EncodedTrace.of(r) for r in batch] if encoded else batch)
        out = io.BytesIO()
        spool.copy_to(out)
        assert out.getvalue().decode() == otlp_jsonl(lines)
        assert list(spool) == lines
        assert len(spool) == len(lines)
        whole = flatten_spans(lines)
        assert spool.candidates == candidate_counts([s for trace in whole.values() for s in trace])
        falls = Waterfalls(spool)
        for trace_id in [*whole, "f" * 32]:
            assert falls[trace_id] == charts.waterfall(whole.get(trace_id, []))
    finally:
        spool.close()


def test_the_spool_leaves_no_file_and_closes_when_dropped() -> None:
    spool = TraceSpool([{"resourceSpans": []}])
    assert not os.path.exists(spool.path)  # unlinked at once: a killed run leaves nothing in /tmp
    handle = spool._file
    del spool
    assert handle.closed


def test_a_run_written_from_a_spool_equals_one_written_from_the_list(tmp_path: Path) -> None:
    import dataclasses

    from tests.harness.test_evaluation_reporting import _recall, _result

    # a real trace id: all zeros is "no trace" (OTEL_SDK_DISABLED), and read_run refuses a span of no row's trace
    results = [dataclasses.replace(_result("s", "heuristic", (_recall("s", 0, "heuristic", 1.0, 0.5),)),
                                   trace_id="5e" * 16)]
    summary = evaluate_run(results, ["heuristic"])
    span = {"traceId": results[0].trace_id, "spanId": "1" * 16, "name": "search_memory",
            "startTimeUnixNano": "1", "endTimeUnixNano": "9",
            "attributes": [{"key": "memory.step", "value": {"intValue": "0"}},
                           {"key": "memory.operation", "value": {"stringValue": "recall"}},  # as a real span says
                           {"key": "memory.recall.candidates", "value": {"intValue": "7"}}]}
    lines = [{"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}]
    html = render_report(summary, results, lines)
    spool = TraceSpool(lines)
    try:
        write_run(tmp_path / "spooled", summary=summary, results=results, spans=spool,
                  html=render_report(summary, results, spool))
    finally:
        spool.close()
    write_run(tmp_path / "listed", summary=summary, results=results, spans=lines, html=html)
    for name in ("traces.jsonl", "report.html", "probes.jsonl", "results.jsonl", "junit.xml", "summary.md"):
        assert (tmp_path / "spooled" / name).read_bytes() == (tmp_path / "listed" / name).read_bytes(), name
    assert "7 candidate memories were considered" in html  # the count reached the probe's notes
    assert ">search_memory</text>" in html  # and the span its waterfall
    assert read_run(tmp_path / "spooled")[2] == lines
