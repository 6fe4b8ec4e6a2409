"""scripts/minilm_server.py: MiniLM embeddings on 127.0.0.1 (here with a stand-in encoder: no torch needed), chat
completions forwarded to the chat server, so the model proxy's one upstream serves both while recording mem0."""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

from harness.replay import ModelProxy
from tests.harness.test_proxy import CHAT, post, upstream

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "minilm_server.py"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("minilm_server", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _encode(texts: Sequence[str]) -> list[list[float]]:
    return [[len(t) / 100, 0.123456789] + [0.0] * 382 for t in texts]


@contextmanager
def server(chat_upstream: str | None = None) -> Iterator[str]:
    srv = _module().make_server(0, _encode, chat_upstream)
    thread = threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    finally:
        srv.shutdown()
        srv.server_close()


def test_embeddings_in_the_openai_shape() -> None:
    with server() as base:
        status, reply = post(f"{base}/embeddings", {"model": "all-MiniLM-L6-v2", "input": ["ab", "abcd"],
                                                    "encoding_format": "float", "dimensions": 384})
        assert status == 200
        assert [d["index"] for d in reply["data"]] == [0, 1]
        assert reply["data"][1]["embedding"][:2] == [0.04, 0.1234568]  # rounded to 7 decimals
        assert len(reply["data"][0]["embedding"]) == 384
        assert post(f"{base}/embeddings", {"model": "m", "input": "one text"})[1]["data"][0]["index"] == 0
        for bad in ({"input": []}, {"input": [1]}, {"input": "x", "dimensions": 1536},
                    {"input": "x", "encoding_format": "base64"}):
            assert post(f"{base}/embeddings", bad)[0] == 400, bad
        assert post(f"{base}/chat/completions", CHAT)[0] == 404  # no chat upstream given


def test_chat_is_forwarded_and_the_proxy_records_both_through_it(tmp_path: Path) -> None:
    with upstream() as chat, server(chat) as base:
        status, reply = post(f"{base}/chat/completions", CHAT)
        assert status == 200
        assert reply["choices"][0]["message"]["content"] == '{"echo": "hello"}'
        with ModelProxy(tmp_path, "record", upstream=base) as proxy:
            assert post(f"{proxy.base_url}/embeddings", {"model": "all-MiniLM-L6-v2", "input": ["x"]})[0] == 200
            assert post(f"{proxy.base_url}/chat/completions", CHAT)[0] == 200
    with ModelProxy(tmp_path, "replay") as proxy:  # both answered from the recording, no server anywhere
        assert post(f"{proxy.base_url}/embeddings", {"model": "all-MiniLM-L6-v2", "input": ["x"]})[0] == 200
        assert post(f"{proxy.base_url}/chat/completions", CHAT)[1]["choices"][0]["message"]["content"] == \
            '{"echo": "hello"}'
