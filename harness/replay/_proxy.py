"""An OpenAI-compatible record/replay proxy for systems that call their models through their own clients.

A third-party memory library (mem0, …) talks to its model with its own HTTP client, so ``CassetteModel`` never sees
those calls. ``ModelProxy`` is a small HTTP server on 127.0.0.1 that such a system is pointed at (base URL
``proxy.base_url``, any API key). Every request is keyed by its endpoint and its whole JSON body (model, messages,
parameters: sha256 of the canonical JSON, like our own cassettes) and

- **replay**: answered from ``proxy.jsonl`` in the cassette set; an unrecorded request is answered ``404`` with an
  ``unrecorded_call`` error naming the scenario, step, endpoint, model and key (a 404, not a 5xx, so clients do not
  retry it), and kept in ``misses`` for the harness to report;
- **record**: answered from the file when recorded, else forwarded to ``upstream`` (an OpenAI-compatible server such
  as the local model server) and appended to the file (fsync'd: a recording survives an interrupt);
- **live**: forwarded, nothing stored.

Defined behaviour for everything else: ``POST`` to ``chat/completions`` and ``embeddings`` (with or without ``/v1``)
only — any other path or method is ``404 unsupported_endpoint``; ``"stream": true`` is ``400 unsupported`` (replies
are recorded whole); a body that is not a JSON object is ``400 invalid_request``; over ``MAX_BODY_BYTES`` is ``413``.
Requests are served concurrently (one thread each); the file and the miss list are guarded by a lock.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final, Literal

from harness.errors import HarnessError, one_line
from harness.replay._cassette import UNRECORDED, append_entry, recording_lines, resolve_set
from harness.replay._jsonl import proxy_entry

PROXY_FILE: Final = "proxy.jsonl"
PROXY_URL_ENV: Final = "MEMHARNESS_MODEL_BASE_URL"
"""Where ``memharness run`` tells a system behind the proxy (factory attribute ``model_proxy = True``) its base URL."""
ENDPOINTS: Final = ("chat/completions", "embeddings")
MAX_BODY_BYTES: Final = 32 * 1024 * 1024
UPSTREAM_TIMEOUT_S: Final = 600.0
Mode = Literal["replay", "record", "live"]


def proxy_key(endpoint: str, body: dict[str, Any]) -> str:
    """The recording key of a request: sha256 of the canonical JSON of its endpoint and body."""
    canonical = json.dumps({"endpoint": endpoint, "body": body}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class ProxyCall:
    """One request the proxy answered (for telemetry and reports)."""

    endpoint: str
    model: str
    key: str
    outcome: str
    """``replayed`` | ``recorded`` | ``live`` | ``unrecorded`` | ``upstream_error``."""
    status: int
    latency_ms: float
    input_tokens: int = 0
    output_tokens: int = 0
    scenario: str = ""
    step: int | None = None

    def describe(self) -> str:
        """``step N: unrecorded model call …``: a replay miss as the harness reports it and the proxy answers it."""
        at = f"step {self.step}" if self.step is None or self.step >= 0 else "before step 0 (seeding the memories)"
        return (f"{at}: {UNRECORDED} {self.endpoint} (model {self.model or '?'}, key "
                f"{self.key[:12]}) through the model proxy; record it with --record --api-base URL")


@dataclass
class ProxyRecording:
    """The entries of one ``proxy.jsonl``, appended to as they are recorded."""

    path: Path
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def open(cls, directory: Path) -> ProxyRecording:
        """Load ``<directory>/proxy.jsonl`` (missing → empty); a line that is not an entry is a located error."""
        recording = cls(directory / PROXY_FILE)
        if not recording.path.exists():
            return recording
        lines: dict[str, int] = {}
        for n, line in enumerate(recording_lines(recording.path), 1):
            entry, problem = proxy_entry(line)
            if problem is not None:
                raise HarnessError(f"{one_line(str(recording.path))}:{n}: {problem[0]}: malformed proxy entry "
                                   f"({problem[1]})")
            if (first := lines.setdefault(entry["key"], n)) != n:  # which to replay is not the file's to leave open
                raise HarnessError(f"{one_line(str(recording.path))}:{n}: key: {one_line(entry['key'])[:16]}… is also "
                                   f"on line {first}; a recording holds one entry per request")
            recording.entries[entry["key"]] = entry
        return recording

    def append(self, entry: dict[str, Any]) -> None:
        append_entry(self.entries, self.lock, self.path, entry)


class ModelProxy:
    """The proxy server: ``with ModelProxy(directory, mode) as proxy: system(base_url=proxy.base_url)``."""

    def __init__(self, directory: Path, mode: Mode = "replay", *, upstream: str | None = None,
                 observer: Callable[[ProxyCall], None] | None = None,
                 where: Callable[[], tuple[str, int | None]] | None = None) -> None:
        if mode != "replay" and not upstream:
            raise HarnessError(f"the model proxy in {mode} mode needs an upstream OpenAI-compatible base URL "
                               "(--api-base)")
        self.recording = ProxyRecording.open(directory)
        self.mode, self.upstream, self.observer = mode, (upstream or "").rstrip("/"), observer
        self.where = where or (lambda: ("", None))
        """(scenario, step) the harness is replaying now, named in a miss."""
        self.misses: list[ProxyCall] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1`` (what an OpenAI client takes as its base URL)."""
        if self._server is None:
            raise HarnessError("the model proxy is not running")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> ModelProxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        proxy = self

        class Handler(_Handler):
            owner = proxy

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="memharness-model-proxy",
                                        daemon=True)  # a short poll: stop() returns at once
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def take_misses(self) -> list[ProxyCall]:
        """The unrecorded calls since the last take (the harness turns them into a located error)."""
        with self.recording.lock:
            misses, self.misses = self.misses, []
        return misses

    # ------------------------------------------------------------------------------------------------- answering
    def answer(self, endpoint: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The status and JSON body the proxy answers a request with (the HTTP layer's only call)."""
        t0 = time.perf_counter()
        key = proxy_key(endpoint, body)
        scenario, step = self.where()
        model = str(body.get("model", ""))
        recorded = self.recording.entries.get(key) if self.mode != "live" else None
        if recorded is not None:
            status, response, outcome = int(recorded["status"]), dict(recorded["response"]), "replayed"
        elif self.mode == "replay":
            miss = ProxyCall(endpoint, model, key, "unrecorded", 404, 0.0, scenario=scenario, step=step)
            status, outcome = 404, "unrecorded"
            response = _error("unrecorded_call", f"memharness: {scenario or 'outside any scenario'} {miss.describe()}")
        else:
            status, response, outcome = self._forward(endpoint, body)
            if outcome == "recorded":
                self.recording.append({"key": key, "endpoint": endpoint, "request": body, "status": status,
                                       "response": response, "scenario": scenario, "step": step,
                                       "latency_ms": round((time.perf_counter() - t0) * 1000, 3)})
        usage = response["usage"] if isinstance(response.get("usage"), dict) else {}
        call = ProxyCall(endpoint, model, key, outcome, status, (time.perf_counter() - t0) * 1000,
                         int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0), scenario, step)
        if outcome == "unrecorded":
            with self.recording.lock:
                self.misses.append(call)
        if self.observer is not None:
            self.observer(call)
        return status, response

    def _forward(self, endpoint: str, body: dict[str, Any]) -> tuple[int, dict[str, Any], str]:
        request = urllib.request.Request(f"{self.upstream}/{endpoint}", data=json.dumps(body).encode("utf-8"),
                                         headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=UPSTREAM_TIMEOUT_S) as reply:
                data = json.loads(reply.read().decode("utf-8"))
                status = reply.status
        except urllib.error.HTTPError as exc:
            exc.close()  # its response holds the connection
            return exc.code, _error("upstream_error", f"upstream {self.upstream} answered {exc.code}"), "upstream_error"
        except (OSError, ValueError) as exc:
            return 502, _error("upstream_error", f"upstream {self.upstream}: {one_line(str(exc))}"), "upstream_error"
        if not isinstance(data, dict):
            return 502, _error("upstream_error", f"upstream {self.upstream} answered JSON that is not an object"), \
                "upstream_error"
        return status, data, "recorded" if self.mode == "record" else "live"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # a client with many threads must not meet a full listen backlog (reset connections)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line, never socketserver's traceback on the user's stderr (a request the handler could not even
        answer: the client went away mid-request, say)."""
        exc = sys.exc_info()[1]
        print(f"memharness: warning: model proxy: a request could not be answered ({type(exc).__name__}: "
              f"{one_line(str(exc))[:200]})", file=sys.stderr)


def proxy_for(factory: object, spec: Any, system: str | None, where: Callable[[], tuple[str, int | None]],
              observer: Callable[[ProxyCall], None] | None = None) -> ModelProxy | None:
    """The started proxy for a system whose factory says ``model_proxy = True`` (its base URL exported in
    ``PROXY_URL_ENV`` for the factory to read), replaying from or recording into the run's cassette set
    (``spec``: its ``ModelSpec``); None for any other system."""
    if not getattr(factory, "model_proxy", False):
        return None
    if spec is None:
        raise HarnessError(f"{system}: a system behind the model proxy needs a cassette set (--cassettes DIR) to "
                           "replay from or record into")
    proxy = ModelProxy(resolve_set(spec.cassettes), spec.mode, upstream=spec.api_base, where=where, observer=observer)
    proxy.start()
    os.environ[PROXY_URL_ENV] = proxy.base_url
    return proxy


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"error": {"type": kind, "message": message, "code": kind}}


class _Handler(BaseHTTPRequestHandler):
    owner: ModelProxy
    protocol_version = "HTTP/1.1"
    timeout = 60  # seconds a client may stall mid-request (a Content-Length longer than what it sends)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the harness reports calls through its observer, not on stderr."""

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")  # no idle keep-alive socket outlives stop()
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def _unsupported(self) -> None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = 0
        if 0 < length <= MAX_BODY_BYTES:
            self.rfile.read(length)  # keep the connection usable
        self._send(404, _error("unsupported_endpoint", f"memharness proxy: {self.command} {self.path} is not "
                                                       f"supported (POST {' or '.join(ENDPOINTS)})"))

    do_GET = do_PUT = do_DELETE = do_PATCH = _unsupported

    def do_POST(self) -> None:
        endpoint = self.path.split("?", 1)[0].strip("/")
        endpoint = endpoint[3:] if endpoint.startswith("v1/") else endpoint
        if endpoint not in ENDPOINTS:
            self._unsupported()
            return
        try:
            length = int(self.headers.get("Content-Length") or -1)
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY_BYTES:
            self.close_connection = True
            self._send(413 if length > MAX_BODY_BYTES else 411,
                       _error("invalid_request", f"a body of 0 to {MAX_BODY_BYTES} bytes with its Content-Length"))
            return
        try:
            body = json.loads(self.rfile.read(length).decode("utf-8"))
            json.dumps(body, ensure_ascii=False).encode("utf-8")  # its key: a lone surrogate (\ud800) has no UTF-8
        except (ValueError, RecursionError) as exc:  # not JSON, not UTF-8, nested too deep, an integer too long
            self._send(400, _error("invalid_request", f"the body is not JSON text a request can hold "
                                                      f"({type(exc).__name__}: {one_line(str(exc))[:200]})"))
            return
        if not isinstance(body, dict):
            self._send(400, _error("invalid_request", "the body must be a JSON object"))
        elif body.get("stream"):
            self._send(400, _error("unsupported", "memharness proxy: streaming replies are not supported (they are "
                                                  "recorded whole); send stream: false"))
        else:
            try:
                status, answer = self.owner.answer(endpoint, body)
            except Exception as exc:  # never a dropped connection: the client gets a JSON error it can report
                status, answer = 500, _error("internal_error", f"memharness proxy: {type(exc).__name__}: "
                                                                f"{one_line(str(exc))[:200]}")
            self._send(status, answer)
