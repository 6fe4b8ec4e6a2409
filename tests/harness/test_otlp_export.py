"""The CLI delivers spans over OTLP/HTTP to a collector named by the standard environment variables."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from harness.cli import main
from tests.harness.conftest import SCENARIOS


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
    import json

    from google.protobuf.json_format import ParseDict

    from harness.tools._push import _b64_ids

    assert main(["run", str(SCENARIOS / "dream"), "--out", str(tmp_path / "o")], environ={}) == 0
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
