"""The OpenAI-compatible record/replay proxy (harness/replay/_proxy.py): record through an upstream, replay with none, every
defined refusal (unrecorded, streaming, unsupported endpoint, bad body), concurrency, a located error for a damaged
recording, and a real OpenAI client that gets a fast, clear error instead of retries."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import HarnessError
from harness.replay import PROXY_FILE, ModelProxy, ProxyCall


class _Upstream(BaseHTTPRequestHandler):
    """A deterministic OpenAI-compatible model: chat answers echo the last message; embeddings are its lengths."""

    calls: ClassVar[list[str]] = []
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).calls.append(self.path)
        if self.path.endswith("/embeddings"):
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            reply: dict[str, Any] = {"object": "list", "model": body["model"], "usage": {"prompt_tokens": len(texts)},
                                     "data": [{"index": i, "embedding": [float(len(t)), 1.0]} for i, t in enumerate(texts)]}
        else:
            last = body["messages"][-1]["content"]
            reply = {"id": "c1", "object": "chat.completion", "model": body["model"],
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": json.dumps({"echo": last})}}],
                     "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True


@contextmanager
def upstream() -> Iterator[str]:
    _Upstream.calls = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    server.request_queue_size = 128
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def post(url: str, body: object, *, raw: bytes | None = None, method: str = "POST") -> tuple[int, dict[str, Any]]:
    data = raw if raw is not None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data if method == "POST" else None, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        with exc:  # its response holds the connection
            return exc.code, json.loads(exc.read())


CHAT = {"model": "m", "messages": [{"role": "user", "content": "hello"}], "temperature": 0.0,
        "response_format": {"type": "json_object"}}
EMBED = {"model": "e", "input": ["one", "three"], "encoding_format": "float"}


def test_record_then_replay_without_a_model(tmp_path: Path) -> None:
    seen: list[ProxyCall] = []
    with upstream() as up, ModelProxy(tmp_path, "record", upstream=up, observer=seen.append,
                                      where=lambda: ("extract/preference", 2)) as proxy:
        first = post(f"{proxy.base_url}/chat/completions", CHAT)
        again = post(f"{proxy.base_url}/chat/completions", CHAT)
        emb = post(f"{proxy.base_url}/embeddings", EMBED)
        assert _Upstream.calls == ["/v1/chat/completions", "/v1/embeddings"]  # the repeat came from the recording
    assert first == again
    assert first[0] == 200
    assert json.loads(first[1]["choices"][0]["message"]["content"]) == {"echo": "hello"}
    assert emb[1]["data"][1]["embedding"] == [5.0, 1.0]
    assert [c.outcome for c in seen] == ["recorded", "replayed", "recorded"]
    assert (seen[0].input_tokens, seen[0].output_tokens, seen[0].scenario, seen[0].step) == (7, 3, "extract/preference", 2)
    entries = [json.loads(line) for line in (tmp_path / PROXY_FILE).read_text().splitlines()]
    assert [e["endpoint"] for e in entries] == ["chat/completions", "embeddings"]
    with ModelProxy(tmp_path, "replay") as replay:  # no upstream at all
        assert post(f"{replay.base_url}/chat/completions", CHAT) == first
        assert post(replay.base_url.removesuffix("/v1") + "/embeddings", EMBED) == emb  # with or without /v1
        assert replay.take_misses() == []


def test_an_unrecorded_call_is_a_fast_404_naming_scenario_step_and_call(tmp_path: Path) -> None:
    with ModelProxy(tmp_path, "replay", where=lambda: ("recall/paraphrase", 4)) as proxy:
        status, body = post(f"{proxy.base_url}/chat/completions", {**CHAT, "temperature": 0.5})
        assert status == 404
        assert body["error"]["type"] == "unrecorded_call"
        for part in ("recall/paraphrase step 4: unrecorded model call chat/completions", "model m"):
            assert part in body["error"]["message"]
        [miss] = proxy.take_misses()
        assert (miss.scenario, miss.step, miss.endpoint, miss.outcome) == ("recall/paraphrase", 4, "chat/completions",
                                                                          "unrecorded")
        assert proxy.take_misses() == []
    assert not (tmp_path / PROXY_FILE).exists()


@pytest.mark.parametrize(("path", "body", "raw", "method", "status", "kind"), [
    ("/chat/completions", {**CHAT, "stream": True}, None, "POST", 400, "unsupported"),
    ("/completions", {"model": "m", "prompt": "x"}, None, "POST", 404, "unsupported_endpoint"),
    ("/models", None, None, "GET", 404, "unsupported_endpoint"),
    ("/embeddings", None, b"{not json", "POST", 400, "invalid_request"),
    ("/embeddings", None, b"\xff\xfe", "POST", 400, "invalid_request"),
    ("/chat/completions", ["a", "list"], None, "POST", 400, "invalid_request"),
])
def test_every_other_request_has_a_defined_refusal(tmp_path: Path, path: str, body: object, raw: bytes | None,
                                                   method: str, status: int, kind: str) -> None:
    with ModelProxy(tmp_path, "replay") as proxy:
        assert post(proxy.base_url + path, body, raw=raw, method=method)[0] == status
        assert post(proxy.base_url + path, body, raw=raw, method=method)[1]["error"]["type"] == kind
        assert proxy.take_misses() == []  # a refusal is not an unrecorded call


def test_record_mode_with_the_upstream_down_stores_nothing(tmp_path: Path) -> None:
    with ModelProxy(tmp_path, "record", upstream="http://127.0.0.1:9/v1") as proxy:
        status, body = post(f"{proxy.base_url}/chat/completions", CHAT)
    assert status == 502
    assert body["error"]["type"] == "upstream_error"
    assert not (tmp_path / PROXY_FILE).exists()


def test_concurrent_recording_and_replay_answer_each_request_its_own_reply(tmp_path: Path) -> None:
    bodies = [{**CHAT, "messages": [{"role": "user", "content": f"q{i % 12}"}]} for i in range(48)]
    with upstream() as up, ModelProxy(tmp_path, "record", upstream=up) as proxy, ThreadPoolExecutor(16) as pool:
        recorded = list(pool.map(lambda b: post(f"{proxy.base_url}/chat/completions", b), bodies))
    assert len((tmp_path / PROXY_FILE).read_text().splitlines()) == 12  # one entry per distinct request
    with ModelProxy(tmp_path, "replay") as proxy, ThreadPoolExecutor(16) as pool:
        replayed = list(pool.map(lambda b: post(f"{proxy.base_url}/chat/completions", b), bodies))
    assert replayed == recorded
    assert [json.loads(r[1]["choices"][0]["message"]["content"])["echo"] for r in replayed] == \
        [b["messages"][0]["content"] for b in bodies]  # type: ignore[index]


JSON = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=12)


@given(st.dictionaries(st.text(max_size=10).filter(lambda k: k != "stream"), JSON, max_size=6))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_request_body_replays_what_was_recorded_for_it_and_only_it(tmp_path: Path, extra: dict[str, Any]) -> None:
    body = {**CHAT, **extra, "model": "m", "messages": CHAT["messages"]}
    body.pop("stream", None)
    directory = tmp_path / str(time.perf_counter_ns())
    with upstream() as up, ModelProxy(directory, "record", upstream=up) as proxy:
        recorded = post(f"{proxy.base_url}/chat/completions", body)
    with ModelProxy(directory, "replay") as proxy:
        assert post(f"{proxy.base_url}/chat/completions", body) == recorded
        changed = {**body, "max_tokens": 1 + int(body.get("max_tokens") or 0) if isinstance(body.get("max_tokens"), int) else 7}
        assert post(f"{proxy.base_url}/chat/completions", changed)[0] == 404  # another request is not answered


@pytest.mark.parametrize(("line", "where"), [
    ('{"key": "k", "endpoint": "embeddings", "status": 200', ":1: line: malformed proxy entry"),
    ('{"key": "k", "endpoint": "embeddings", "status": "200", "response": {}}', ":1: status: malformed proxy entry"),
    ('[1, 2]', ":1: key: malformed proxy entry"),
])
def test_a_damaged_recording_is_a_located_error(tmp_path: Path, line: str, where: str) -> None:
    (tmp_path / PROXY_FILE).write_text(line + "\n")
    with pytest.raises(HarnessError, match=f"{PROXY_FILE}{where}"):
        ModelProxy(tmp_path, "replay")


def test_record_and_live_need_an_upstream(tmp_path: Path) -> None:
    for mode in ("record", "live"):
        with pytest.raises(HarnessError, match="needs an upstream"):
            ModelProxy(tmp_path, mode)


def test_an_openai_client_gets_the_miss_at_once_without_retrying(tmp_path: Path) -> None:
    openai = pytest.importorskip("openai")
    with ModelProxy(tmp_path, "replay") as proxy:
        with openai.OpenAI(base_url=proxy.base_url, api_key="sk-none", timeout=10) as client:
            t0 = time.perf_counter()
            with pytest.raises(openai.NotFoundError, match="unrecorded model call"):
                client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert time.perf_counter() - t0 < 5  # no retry back-off on a 404
        assert len(proxy.take_misses()) == 1


def test_a_miss_while_seeding_says_so_not_step_minus_one() -> None:
    from harness.replay import ProxyCall

    seeding = ProxyCall("embeddings", "m", "0123456789abcdef", "unrecorded", 404, 1.0, scenario="s", step=-1)
    assert seeding.describe().startswith("before step 0 (seeding the memories): unrecorded model call embeddings")
    assert ProxyCall("embeddings", "m", "k" * 16, "unrecorded", 404, 1.0, step=2).describe().startswith("step 2: ")


def test_a_factory_that_reads_the_proxy_url_without_asking_for_the_proxy_is_told_how() -> None:
    from harness.errors import SystemFailure
    from harness.replay import PROXY_URL_ENV
    from harness.replay._observed import _contained

    def factory() -> str:  # what a factory of your own does when it forgot model_proxy = True
        return {}[PROXY_URL_ENV]  # type: ignore[no-any-return]

    with pytest.raises(SystemFailure, match=r"factory\(\) raised KeyError: 'MEMHARNESS_MODEL_BASE_URL' \(a system "
                       r"behind the model proxy reads \$MEMHARNESS_MODEL_BASE_URL: its factory says so with "
                       r"model_proxy = True\)$"), _contained("factory", 5):
        factory()
    with pytest.raises(SystemFailure, match=r"raised KeyError: 'other'$"), _contained("factory", 5):
        raise KeyError("other")  # any other KeyError: no hint
