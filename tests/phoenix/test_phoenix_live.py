"""Issue 15 acceptance: a small suite exported over OTLP into a live Arize Phoenix, read back through its REST API.

One ``memharness run`` (the CLI, in a subprocess) replays a few shipped scenarios with ``--strategy heuristic,model``
(model calls from the cassettes) plus one deliberately failing copy, with ``OTEL_EXPORTER_OTLP_ENDPOINT`` pointing at
Phoenix. Each test checks one demand of the issue against what Phoenix stored (``GET /v1/projects/{name}/spans``),
so a failure names the missing behaviour. The spans Phoenix returned are kept in ``<run>/phoenix-spans.json``.
"""

from __future__ import annotations

import shutil
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from harness.reporting import read_jsonl
from harness.telemetry import otlp_spans
from tests.phoenix.conftest import (
    FAILING,
    PROJECT,
    REPO,
    SCENARIOS,
    SHIPPED,
    Phoenix,
    Run,
    run_memharness,
    wait_for_spans,
)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("phoenix")]  # one Phoenix server, on one xdist worker

RUN_ID_ATTR = "memharness.run_id"  # also summary.json "run_id"
FAKE_TIME_ATTR = "memory.scenario.time"  # the scenario's fake clock, now that timestamps are wall-clock
EVAL_EVENT = "gen_ai.evaluation.result"
SLACK = timedelta(milliseconds=500)  # clock rounding between this process and the run's subprocess
SCREENSHOT = REPO / "reports" / "phoenix-trace.png"


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _roots(run: Run) -> list[dict[str, Any]]:
    return [s for s in run.spans if s["parent_id"] is None]


def _describe(spans: list[dict[str, Any]], limit: int = 6) -> str:
    return "; ".join(f"{s['name']} kind={s['span_kind']} status={s['status_code']} {s['start_time']}..{s['end_time']}"
                     for s in spans[:limit])


def _by_name(run: Run, name: str) -> list[dict[str, Any]]:
    return [s for s in run.spans if s["name"] == name]


_LOOPBACK = {"0100007F", "00000000000000000000000001000000", "0000000000000000FFFF00000100007F"}


def _listening_addresses(port: int) -> set[str]:
    """Hex local addresses of LISTEN sockets on ``port`` from /proc/net/tcp and tcp6 (state 0A)."""
    found = set()
    for table in (Path("/proc/net/tcp"), Path("/proc/net/tcp6")):
        for line in table.read_text().splitlines()[1:] if table.exists() else []:
            fields = line.split()
            address, _, hex_port = fields[1].partition(":")
            if fields[3] == "0A" and int(hex_port, 16) == port:
                found.add(address)
    return found


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc/net/tcp")
def test_phoenix_listens_on_loopback_only(phoenix: Phoenix) -> None:
    for var in ("PHOENIX_PORT", "PHOENIX_GRPC_PORT"):
        addresses = _listening_addresses(int(phoenix.env[var]))
        assert addresses, f"nothing listens on {var}={phoenix.env[var]}"
        assert addresses <= _LOOPBACK, f"{var}={phoenix.env[var]} listens on non-loopback addresses {addresses}"


def test_run_completed_and_every_span_arrived(exported_run: Run) -> None:
    lines = otlp_spans(read_jsonl(exported_run.out / "traces.jsonl"))
    assert exported_run.returncode == 1, f"expected exit 1 (one failing scenario), got {exported_run.returncode}: " \
                                         f"{exported_run.stderr[-1500:]}"
    assert exported_run.spans, f"Phoenix has no spans in project {PROJECT!r}"
    assert len(exported_run.spans) == len(lines), f"Phoenix holds {len(exported_run.spans)} spans, traces.jsonl {len(lines)}"


def test_project_name_comes_from_the_resource(phoenix: Phoenix, exported_run: Run) -> None:
    assert PROJECT in phoenix.projects()
    assert not phoenix.spans("default"), "spans landed in Phoenix's default project"


def test_a_trace_for_every_scenario_and_strategy(exported_run: Run) -> None:
    ids = {Path(p).stem for p in SHIPPED} | {FAILING}
    pairs = {(r["scenario"], r["strategy"]) for r in exported_run.results}
    assert {s for s, _ in pairs} == ids
    assert {(FAILING, "heuristic"), (FAILING, "model")} <= pairs
    # the second shipped system's roots carry memory.system: its results are the `strategy@system` columns
    in_phoenix = {(s["attributes"].get("test.case.name"), s["attributes"].get("memory.scenario.strategy")
                   + (f"@{s['attributes']['memory.system']}" if s["attributes"].get("memory.system") else "")):
                  s["context"]["trace_id"] for s in _roots(exported_run)}
    missing = sorted(pairs - set(in_phoenix))
    assert not missing, f"no root span in Phoenix for {missing}"
    for r in exported_run.results:
        assert in_phoenix[(r["scenario"], r["strategy"])] == r["trace_id"], f"trace id differs for {r['scenario']}"
        assert len(exported_run.spans_of(r["trace_id"])) >= 2, f"{r['scenario']} [{r['strategy']}]: root span only"


def test_spans_have_real_durations(exported_run: Run) -> None:
    flat = [s for s in exported_run.spans if _time(s["end_time"]) <= _time(s["start_time"])]
    assert not flat, f"{len(flat)}/{len(exported_run.spans)} spans last 0 s or less, e.g. {_describe(flat)}"
    # A fake clock that ticks 1 µs per span also gives durations > 0: the scenario's root span must last about as
    # long as the replay really took (results.jsonl duration_ms is measured with a monotonic clock).
    # Summed over the run, so one pause of the machine outside a span (a 10 ms stall once made a 19 ms replay's
    # root span 9 ms in CI) cannot fail it, while a fake clock (µs spans) still does; and each root at least 0.1x.
    roots = {s["context"]["trace_id"]: s for s in _roots(exported_run)}
    spans_s = replays_s = 0.0
    for r in exported_run.results:
        root = roots[r["trace_id"]]
        seconds = (_time(root["end_time"]) - _time(root["start_time"])).total_seconds()
        spans_s, replays_s = spans_s + seconds, replays_s + r["duration_ms"] / 1000
        assert seconds >= 0.1 * r["duration_ms"] / 1000, (f"{r['scenario']} [{r['strategy']}]: root span lasts "
                                                          f"{seconds * 1000:.3f} ms, the replay took {r['duration_ms']:.1f} ms")
    assert spans_s >= 0.8 * replays_s, f"root spans last {spans_s:.3f} s in all, the replays took {replays_s:.3f} s"


def test_span_timestamps_lie_inside_the_run_wall_clock_window(exported_run: Run) -> None:
    start, end = exported_run.window
    outside = [s for s in exported_run.spans
               if not (start - SLACK <= _time(s["start_time"]) and _time(s["end_time"]) <= end + SLACK)]
    assert not outside, (f"{len(outside)}/{len(exported_run.spans)} spans outside the run's window "
                         f"{start.isoformat()}..{end.isoformat()}, e.g. {_describe(outside)}")


def test_the_scenario_fake_time_is_an_attribute_on_every_span(exported_run: Run) -> None:
    without = [s for s in exported_run.spans if FAKE_TIME_ATTR not in s["attributes"]]
    assert not without, f"{len(without)}/{len(exported_run.spans)} spans lack {FAKE_TIME_ATTR}, e.g. {_describe(without)}"


def test_the_failing_scenario_is_error(exported_run: Run) -> None:
    roots = [s for s in _roots(exported_run) if s["attributes"].get("test.case.name") == FAILING]
    assert len(roots) == 4  # heuristic and model, on each shipped system (it names no system)
    for root in roots:
        assert root["attributes"].get("test.case.result.status") == "fail"
        assert root["status_code"] == "ERROR", f"root of {FAILING}: status {root['status_code']}"
        assert root["status_message"], "ERROR without a description"
        trace = exported_run.spans_of(root["context"]["trace_id"])
        recall = [s for s in trace if s["name"] == "search_memory"]
        assert recall, "the failing trace has no recall span"
        assert all(s["status_code"] == "ERROR" and s["status_message"] for s in recall), \
            f"the recall whose expectation failed is not ERROR: {_describe(recall)}"


def test_passed_scenarios_are_ok(exported_run: Run) -> None:
    passed = [s for s in _roots(exported_run) if s["attributes"].get("test.case.result.status") == "pass"]
    assert passed
    not_ok = [s for s in passed if s["status_code"] != "OK"]
    assert not not_ok, f"{len(not_ok)}/{len(passed)} passed scenario roots are not OK: {_describe(not_ok)}"


def test_a_fallback_is_error(exported_run: Run) -> None:
    fell_back = [s for s in exported_run.spans if s["attributes"].get("memory.fallback_reason")]
    assert fell_back, "fallback-invalid-json [model] produced no span with memory.fallback_reason"
    not_error = [s for s in fell_back if s["status_code"] != "ERROR" or not s["status_message"]]
    assert not not_error, f"fallback spans without ERROR + description: {_describe(not_error)}"


def test_evaluation_events_on_recall_spans(exported_run: Run) -> None:
    recalls = _by_name(exported_run, "search_memory")
    assert recalls
    seen: Counter[str] = Counter()
    for span in recalls:
        events = [e for e in span["events"] if e["name"] == EVAL_EVENT]
        assert events, (f"recall span {span['context']['span_id']} has no {EVAL_EVENT} event; "
                        f"events: {[e['name'] for e in span['events']]}")
        for event in events:
            attrs = event["attributes"]
            assert attrs.get("gen_ai.evaluation.name"), attrs
            assert "gen_ai.evaluation.score.value" in attrs or "gen_ai.evaluation.score.label" in attrs, attrs
            seen[str(attrs["gen_ai.evaluation.name"])] += 1
    assert {"precision", "recall"} <= {name.rsplit(".", 1)[-1] for name in seen}, dict(seen)


def test_failed_expectations_are_evaluation_events(exported_run: Run) -> None:
    failing = [s for s in exported_run.spans if s["attributes"].get("test.case.name") == FAILING or
               any(r["context"]["trace_id"] == s["context"]["trace_id"] for r in _roots(exported_run)
                   if r["attributes"].get("test.case.name") == FAILING)]
    labels = [e["attributes"].get("gen_ai.evaluation.score.label") for s in failing for e in s["events"]
              if e["name"] == EVAL_EVENT]
    assert "fail" in labels or "failed" in labels, f"no failing evaluation event in {FAILING}; labels {labels}"


def test_llm_spans_have_token_counts(exported_run: Run) -> None:
    llm = [s for s in exported_run.spans if s["span_kind"] == "LLM"]
    assert llm, f"no LLM span; kinds seen: {dict(Counter(s['span_kind'] for s in exported_run.spans))}"
    answered = [s for s in llm if s["status_code"] != "ERROR"]
    assert answered
    for span in answered:
        a = span["attributes"]
        assert a.get("llm.token_count.prompt", 0) > 0, a
        assert a.get("llm.token_count.completion", 0) > 0, a
        assert a.get("gen_ai.usage.input_tokens", 0) > 0, a


def test_span_kinds_retriever_chain_llm(exported_run: Run) -> None:
    kinds = {(s["name"].split(" ")[0], s["span_kind"]) for s in exported_run.spans}
    unknown = sorted({name for name, kind in kinds if kind == "UNKNOWN"})
    assert not unknown, f"span kind UNKNOWN for {unknown}; all (name, kind): {sorted(kinds)}"
    for span in _by_name(exported_run, "search_memory"):
        assert span["span_kind"] == "RETRIEVER"
        if span["attributes"].get("gen_ai.memory.record.count"):
            assert "retrieval.documents.0.document.id" in span["attributes"], sorted(span["attributes"])
            assert "retrieval.documents.0.document.score" in span["attributes"], sorted(span["attributes"])
    others = [s for s in exported_run.spans if s["name"] in ("upsert_memory", "delete_memory") or s["parent_id"] is None]
    assert others
    not_chain = [s for s in others if s["span_kind"] != "CHAIN"]
    assert not not_chain, _describe(not_chain)


def test_run_id_on_every_span(exported_run: Run) -> None:
    run_id = exported_run.run_id
    assert run_id
    wrong = [s for s in exported_run.spans if s["attributes"].get(RUN_ID_ATTR) != run_id]
    assert not wrong, (f"{len(wrong)}/{len(exported_run.spans)} spans lack {RUN_ID_ATTR}={run_id} (Phoenix keeps span "
                       f"attributes only, not resource attributes), e.g. {_describe(wrong)}")


def test_exporters_do_not_spam(exported_run: Run) -> None:
    noisy = [ln for ln in exported_run.stderr.splitlines() if "export" in ln.lower() and ("405" in ln or "fail" in ln.lower())]
    assert len(noisy) <= 1, f"{len(noisy)} exporter lines on stderr: {noisy[:5]}"


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


@pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER), reason="needs Debian's chromium and chromium-driver")
def test_screenshot_of_a_recall_span_in_phoenix(phoenix: Phoenix, exported_run: Run, tmp_path: Path) -> None:
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is in the dev extra")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    recall = next((s for s in _by_name(exported_run, "search_memory")
                   if any(r["context"]["trace_id"] == s["context"]["trace_id"] and r["attributes"].get("test.case.name")
                          == "multi-fact" for r in _roots(exported_run))), None)
    assert recall is not None, "no recall span of multi-fact in Phoenix"
    options = Options()
    options.binary_location = CHROMIUM  # type: ignore[assignment]
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                 f"--user-data-dir={tmp_path / 'chromium-profile'}", "--window-size=1600,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        # Phoenix's UI resolves an OpenTelemetry span id to its trace view with that span selected.
        driver.get(f"{phoenix.base}/redirects/spans/{recall['context']['span_id']}")
        WebDriverWait(driver, 60).until(lambda d: "search_memory" in d.find_element(By.TAG_NAME, "body").text)
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        assert driver.save_screenshot(str(SCREENSHOT))
        url = driver.current_url
    finally:
        driver.quit()
    assert recall["context"]["trace_id"] in url or "selectedSpanNodeId" in url, url
    assert SCREENSHOT.stat().st_size > 10_000


def test_a_second_run_is_stored_too(phoenix: Phoenix, exported_run: Run, tmp_path: Path) -> None:
    """Phoenix keeps the first span per span id and drops later ones (INSERT ... ON CONFLICT DO NOTHING), so span
    and trace ids must differ between runs, or a re-run of the same scenario never shows up."""
    before = len(phoenix.spans(PROJECT))
    second = run_memharness(phoenix, [str(SCENARIOS / "recall" / "multi-fact.yaml"), "--strategy", "heuristic"],
                            tmp_path / "second")
    sent = len(otlp_spans(read_jsonl(tmp_path / "second" / "traces.jsonl")))
    assert second.returncode == 0, second.stderr[-1000:]
    assert sent > 0
    after = wait_for_spans(phoenix, before + sent)
    assert len(after) == before + sent, (f"Phoenix holds {len(after)} spans after a second run of {sent} spans on top of "
                                         f"{before}: the second run's span ids collided with the first run's")


def test_the_report_links_each_scenario_to_its_trace_in_phoenix(phoenix: Phoenix, exported_run: Run) -> None:
    html = (exported_run.out / "report.html").read_text(encoding="utf-8")
    missing = [r["trace_id"] for r in exported_run.results
               if f'href="{phoenix.base}/redirects/traces/{r["trace_id"]}"' not in html]
    assert not missing, f"{len(missing)} scenario(s) without a link to their Phoenix trace, e.g. {missing[:2]}"
