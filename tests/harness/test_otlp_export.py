"""The CLI delivers spans over OTLP/HTTP to a collector named by the standard environment variables."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from harness.cli import main
from tests.harness.conftest import SCENARIOS
from tests.helpers import fresh_process_run


class _Collector(BaseHTTPRequestHandler):
    received: ClassVar[list[tuple[str, bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        type(self).received.append((self.path, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return None


def test_spans_reach_a_local_otlp_http_receiver(tmp_path: Path) -> None:
    _Collector.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        # an endpoint alone would export traces only; logs and metrics are asked for explicitly
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{server.server_port}", "OTEL_SERVICE_NAME": "mh-test",
               "OTEL_LOGS_EXPORTER": "otlp", "OTEL_METRICS_EXPORTER": "otlp"}
        code = main(["run", str(SCENARIOS / "forget"), "--out", str(tmp_path / "o")], environ=env)
        assert code == 0
    finally:
        server.shutdown()
        server.server_close()
    traces = [body for path, body in _Collector.received if path == "/v1/traces"]
    assert traces, [p for p, _ in _Collector.received]
    names = set()
    for body in traces:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for rs in request.resource_spans:
            service = {a.key: a.value.string_value for a in rs.resource.attributes}["service.name"]
            assert service == "mh-test"
            names |= {s.name for ss in rs.scope_spans for s in ss.spans}
    assert {"delete_memory", "scenario no-match", "scenario single-entry-unlinked"} <= names
    assert {path for path, _ in _Collector.received} >= {"/v1/traces", "/v1/metrics", "/v1/logs"}


def test_a_dead_collector_never_fails_the_run(tmp_path: Path) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_EXPORTER_OTLP_TIMEOUT": "1",
           "OTEL_METRICS_EXPORTER": "none", "OTEL_LOGS_EXPORTER": "none"}
    assert main(["run", str(SCENARIOS / "forget" / "no-match.yaml"), "--out", str(tmp_path / "o")], environ=env) == 0
    assert (tmp_path / "o" / "traces.jsonl").read_text()


def test_an_endpoint_alone_exports_traces_only(tmp_path: Path) -> None:
    """Trace backends such as Phoenix answer 405 to logs and metrics: they go over OTLP only when asked for."""
    _Collector.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{server.server_port}"}
        assert main(["run", str(SCENARIOS / "forget" / "single-entry-unlinked.yaml"), "--out", str(tmp_path / "o")],
                    environ=env) == 0
    finally:
        server.shutdown()
        server.server_close()
    assert {path for path, _ in _Collector.received} == {"/v1/traces"}


def test_traces_jsonl_holds_one_trace_per_line_with_hex_ids_that_round_trip(tmp_path: Path) -> None:
    import base64

    from google.protobuf.json_format import ParseDict

    from harness.telemetry._otlp_read import b64_ids as _b64_ids

    # the reference: every step of these runs makes an operation span (on the SQLite system some skip, unsupported)
    assert main(["run", str(SCENARIOS / "dream"), "--system", "reference", "--out", str(tmp_path / "o")], environ={}) == 0
    lines = [json.loads(x) for x in (tmp_path / "o" / "traces.jsonl").read_text().splitlines()]
    results = (tmp_path / "o" / "results.jsonl").read_text().splitlines()
    assert len(lines) == len(results)  # one OTLP-JSON request per scenario × strategy (DESIGN §3)
    for line in lines:
        spans = [s for rs in line["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
        assert len(spans) > 1
        assert len({s["traceId"] for s in spans}) == 1
        for s in spans:
            assert len(s["traceId"]) == 32 and len(s["spanId"]) == 16  # hex, as OTLP/JSON wants  # noqa: PT018
            int(s["traceId"], 16)
        request = ExportTraceServiceRequest()
        ParseDict(_b64_ids(line), request)  # the hex ids turn back into the exact bytes
        assert request.resource_spans[0].scope_spans[0].spans[0].trace_id == bytes.fromhex(spans[0]["traceId"])
        assert base64.b64encode(bytes.fromhex(spans[0]["spanId"])).decode()


@pytest.mark.slow
def test_direct_otlp_json_equals_the_protobuf_path_on_every_span_of_a_run() -> None:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import Link, SpanKind, Status, StatusCode

    from harness.replay import ModelSpec, RunConfig, Worker
    from harness.scenario import load_all
    from harness.telemetry import protobuf_otlp_json, spans_to_otlp_json
    from harness.telemetry._otlp_json import _direct  # the fast path itself, not its protobuf fallback

    memory = InMemorySpanExporter()
    config = RunConfig(strategies=("heuristic", "model"), model=ModelSpec(SCENARIOS / "cassettes"))
    worker = Worker(config)
    worker.setup.telemetry.tracer_provider.add_span_processor(SimpleSpanProcessor(memory))
    for scenario in load_all([SCENARIOS / "language", SCENARIOS / "model", SCENARIOS / "recall"]):
        worker.run(scenario)
    spans = list(memory.get_finished_spans())
    assert len(spans) > 150
    # and the corners a replay never reaches: links, remote parents, every value type, statuses, a second scope
    provider = TracerProvider(resource=Resource.create({"service.name": "corner", "n": 3, "ok": True, "f": 0.5}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("corner-scope", "1.2.3", schema_url="https://example.test/schema")
    with tracer.start_as_current_span("root", kind=SpanKind.CLIENT) as root:
        root.set_attributes({"s": "", "i": -7, "f": float("inf"), "n": float("nan"), "b": False,
                             "arr": ("a", "b"), "ints": [1, 2], "empty": ()})
        root.add_event("evt", {"k": 1.25})
        root.set_status(Status(StatusCode.ERROR, "broken"))
        link = Link(root.get_span_context(), {"why": "follows"})
    with tracer.start_span("linked", links=[link], kind=SpanKind.PRODUCER) as linked:
        linked.set_status(Status(StatusCode.OK))
        linked.set_attribute("too_big", 2**63)  # outside int64: protobuf drops it, and so must the direct path
    with tracer.start_span("") as unnamed:
        unnamed.set_status(Status(StatusCode.UNSET, "ignored"))
    corner = [s for s in memory.get_finished_spans() if s.resource.attributes.get("service.name") == "corner"]
    for batch in ([s] for s in spans[:50]):
        assert _direct(batch) == protobuf_otlp_json(batch)
    by_trace: dict[int, list[Any]] = {}
    for span in spans:
        by_trace.setdefault(span.context.trace_id, []).append(span)
    in_range = [c for c in corner if "too_big" not in (c.attributes or {})]
    assert spans_to_otlp_json(corner) == protobuf_otlp_json(corner)  # the out-of-range int takes the protobuf path
    twin = TracerProvider(resource=Resource.create({"service.name": "corner", "n": 3, "ok": True, "f": 0.5}))
    twin.add_span_processor(SimpleSpanProcessor(memory))  # an equal resource in another object: merged, as protobuf does
    with twin.get_tracer("corner-scope", "1.2.3", schema_url="https://example.test/schema").start_span("twin"):
        pass
    twins = [s for s in memory.get_finished_spans() if s.name == "twin"]
    assert twins[0].resource is not in_range[0].resource
    for batch in [*by_trace.values(), spans, in_range, [*in_range, *spans[:5]], [*in_range, *twins, *spans[:3]]]:
        direct, reference = _direct(batch), protobuf_otlp_json(batch)
        assert json.dumps(direct, sort_keys=True) == json.dumps(reference, sort_keys=True)  # NaN-safe comparison


def _delivered(argv: list[str], out: Path) -> tuple[set[str], list[dict[str, Any]]]:
    """Run ``memharness run ARGV --out OUT`` against a local OTLP/HTTP collector: the span ids the collector received
    and the run's ``traces.jsonl`` requests."""
    from harness.reporting import read_jsonl

    _Collector.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{server.server_port}"}
        run = fresh_process_run if "--jobs" in argv else lambda args, environ: main(args, environ=environ)
        assert run(["run", *argv, "--no-gates", "--out", str(out)], env) == 0  # a pool forks in a fresh process
    finally:
        server.shutdown()
        server.server_close()
    received = set()
    for path, body in _Collector.received:
        if path == "/v1/traces":
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            received |= {s.span_id.hex() for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans}
    return received, read_jsonl(out / "traces.jsonl")


def test_pool_workers_deliver_every_span_before_they_exit(tmp_path: Path) -> None:
    """A forked pool worker leaves through os._exit (no atexit): its batched spans must still reach the collector."""
    from harness.telemetry import otlp_spans

    received, requests = _delivered([str(SCENARIOS / "forget"), str(SCENARIOS / "dream"), "--jobs", "2"],
                                    tmp_path / "o")
    written = {s["spanId"] for s in otlp_spans(requests)}
    assert written
    assert written == received


def test_traces_jsonl_lines_parse_back_to_the_requests_and_refused_values_fall_back() -> None:
    from harness.telemetry import otlp_jsonl

    plain = {"resourceSpans": [{"resource": {"attributes": [{"key": "k", "value": {"stringValue": "é ✓ \u2028"}}]},
                                "scopeSpans": [{"spans": [{"name": "s", "attributes": [
                                    {"key": "d", "value": {"doubleValue": 0.1}},
                                    {"key": "n", "value": {"doubleValue": "NaN"}}]}]}]}]}
    big = {"resourceSpans": [], "n": 2**70}  # orjson refuses ints past 64 bits
    surrogate = {"name": "lone \ud800 surrogate"}  # and strings that are not valid UTF-8
    odd = {"n": -(2**70), "x": [float("nan"), float("inf")]}  # the fallback writes null for these, as orjson does
    text = otlp_jsonl([plain, big, surrogate, odd])
    lines = text.split("\n")[:-1]
    assert len(lines) == 4
    assert text.endswith("\n")
    assert [json.loads(line) for line in lines] == [plain, big, surrogate, {"n": -(2**70), "x": [None, None]}]
    assert "é ✓" in lines[0]  # UTF-8 as is, not \u escapes
    text.encode("utf-8")  # the fallback escaped the surrogate: the file can be written
    assert otlp_jsonl([]) == ""


@pytest.mark.slow
def test_the_side_process_delivers_every_span_before_it_exits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The forked litellm side process flushes its exporters after sending its results: the parent waits for it."""
    from harness.replay import _side, _suite
    from harness.telemetry import otlp_spans

    monkeypatch.setattr(_suite, "_SUITES_RUN", 0)  # a fresh process, as far as the run can tell
    monkeypatch.setattr(_side, "possible", lambda: True)  # with a spare core, whatever this worker imported
    received, requests = _delivered([str(SCENARIOS / "language" / "model-transport-faults.yaml"),
                                     str(SCENARIOS / "forget"), "--cassettes", str(SCENARIOS / "cassettes")],
                                    tmp_path / "o")
    instances = {a["value"]["stringValue"] for r in requests for a in r["resourceSpans"][0]["resource"]["attributes"]
                 if a["key"] == "service.instance.id"}
    assert len(instances) == 2  # the transport-fault scenario's trace came from the side process
    written = {s["spanId"] for s in otlp_spans(requests)}
    assert written
    assert written == received
