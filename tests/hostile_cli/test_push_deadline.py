"""``memharness traces push`` against a backend that accepts and then answers slowly or never: each batch is
answered within the timeout in all, not per socket read (round-10 probe: one byte every half second held the push
for as long as the backend liked)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.tools._push import push

SPAN = {"traceId": "0" * 31 + "1", "spanId": "0" * 15 + "1", "name": "x", "startTimeUnixNano": "1",
        "endTimeUnixNano": "2"}


def _serve(sock: socket.socket, mode: str, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            conn, _ = sock.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(0.5)
            try:
                conn.recv(65536)
                if mode == "garbage":  # an answer that is not HTTP at all
                    conn.sendall(b"GARBAGE\r\n\r\n")
                    continue
                reply = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"
                for byte in reply if mode == "trickle" else b"":
                    if stop.wait(0.2):
                        return
                    conn.sendall(bytes([byte]))
                while mode != "trickle" and not stop.wait(0.2):  # black hole: read nothing, answer nothing
                    pass
            except OSError:
                continue


@pytest.fixture(params=["trickle", "blackhole", "garbage"])
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(4)
    stop = threading.Event()
    thread = threading.Thread(target=_serve, args=(sock, request.param, stop), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    stop.set()
    sock.close()


def test_a_slow_or_silent_backend_ends_the_push_within_its_timeout(tmp_path: Path, backend: str) -> None:
    (tmp_path / "traces.jsonl").write_text(json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [
        {"scope": {}, "spans": [SPAN]}]}]}) + "\n", encoding="utf-8")
    outcome: list[BaseException | int] = []

    def run() -> None:
        try:
            outcome.append(push(tmp_path, backend, timeout=1.0))
        except BaseException as exc:  # handed to the test's thread
            outcome.append(exc)

    t0 = time.monotonic()
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(15)
    assert not worker.is_alive(), "traces push still waiting after 15 s with a 1 s timeout"
    assert time.monotonic() - t0 < 5
    [got] = outcome
    assert isinstance(got, HarnessError), got  # never a success, never a traceback from the sending thread
    assert str(got) in (f"{backend}/v1/traces: the backend did not answer a batch within 1 s",
                        f"{backend}/v1/traces: cannot reach the backend (timed out)",  # the socket's own 1 s, first
                        f"{backend}/v1/traces: the backend's answer is not HTTP (BadStatusLine: GARBAGE)")
