from __future__ import annotations

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from harness.errors import CassetteMiss
from harness.replay import Cassette, CassetteModel, ProbeContext, request_key
from memory_core.errors import ModelError
from memory_core.files.recall import RECALL_SCHEMA, recall_request, select_by_model
from memory_core.files.topic import TopicDoc
from memory_core.litellm_model import LiteLLMModel
from memory_core.model import Message, ModelRequest, ScriptedModel, parse_json_lenient
from tests.harness.conftest import SCENARIOS

DOCS = [TopicDoc("feedback", "feedback/terse.md", "Terse", "terse answers", "x", 1.7e12),
        TopicDoc("project", "project/freeze.md", "Freeze", "merge freeze", "x", 1.7e12)]


def _request_from(entry: dict[str, Any]) -> ModelRequest:
    r = entry["request"]
    return ModelRequest(entry["purpose"], tuple(Message(m["role"], m["content"]) for m in r["messages"]), r["schema"],
                        5.0, entry["prompt_version"], r["temperature"], r["max_tokens"], r.get("grammar"))


@pytest.mark.slow
def test_committed_cassette_replays_through_litellm_twice_identically() -> None:
    cassette = Cassette.open(SCENARIOS / "cassettes")
    assert len(cassette) >= 10
    entry = next(e for e in cassette.entries.values() if "response" in e and '"selected_memories": [' in e["response"]["text"]
                 .replace('":[', '": ['))
    request = _request_from(entry)
    assert request_key(entry["model"], request) == entry["key"]
    adapter = LiteLLMModel(entry["model"])
    model = CassetteModel(cassette, entry["model"], "replay", adapter=adapter)
    first, second = model.query(request), model.query(request)
    assert first == second
    assert first.text == entry["response"]["text"]
    assert (first.input_tokens, first.output_tokens) == (entry["response"]["input_tokens"],
                                                         entry["response"]["output_tokens"])
    assert first.latency_ms == entry["response"]["latency_ms"]
    assert first.replayed


def test_empty_cassette_replay_names_the_call(tmp_path: Path) -> None:
    context = ProbeContext("recall/x", 3, "model")
    model = CassetteModel(Cassette.open(tmp_path), "openai/m", "replay", context=context)
    request = recall_request("terse?", DOCS, limit=5, timeout_s=5)
    with pytest.raises(CassetteMiss) as err:
        model.query(request)
    message = str(err.value)
    assert "unrecorded model call in recall/x step 3" in message
    assert "purpose auto-memory-recall" in message
    assert request.prompt_version in message
    assert request_key("openai/m", request)[:16] in message
    assert not isinstance(err.value, ModelError)  # a miss must not silently fall back to the heuristic


def test_record_then_replay_including_errors(tmp_path: Path) -> None:
    inner = ScriptedModel.of([{"selected_memories": ["feedback/terse.md"]}, ModelError("slow", reason="timeout")])
    recorder = CassetteModel(Cassette.open(tmp_path), "openai/m", "record", inner)
    ok = recall_request("terse?", DOCS, limit=5, timeout_s=5)
    slow = recall_request("freeze?", DOCS, limit=5, timeout_s=5)
    assert select_by_model("terse?", DOCS, model=recorder) == [DOCS[0]]
    with pytest.raises(ModelError):
        recorder.query(slow)
    lines = (tmp_path / "cassette.jsonl").read_text().splitlines()
    assert len(lines) == 2
    assert json.loads(lines[1])["error"] == {"reason": "timeout", "message": "slow"}
    replayer = CassetteModel(Cassette.open(tmp_path), "openai/m", "replay")
    assert replayer.query(ok).data == {"selected_memories": ["feedback/terse.md"]}
    with pytest.raises(ModelError) as err:
        replayer.query(slow)
    assert err.value.reason == "timeout"
    assert len(inner.calls) == 2  # replay never called the model


def test_status_lists_entries_with_changed_prompts(tmp_path: Path) -> None:
    inner = ScriptedModel.of([{"selected_memories": []}])
    CassetteModel(Cassette.open(tmp_path), "m", "record", inner).query(recall_request("q x", DOCS, limit=5, timeout_s=5))
    assert list(Cassette.open(tmp_path).stale()) == []
    path = tmp_path / "cassette.jsonl"
    entry = json.loads(path.read_text())
    entry["prompt_version"] = "recall_system@000000000000+" + entry["prompt_version"].split("+")[1]
    path.write_text(json.dumps(entry) + "\n")
    [(_entry, changes)] = list(Cassette.open(tmp_path).stale())
    assert changes[0].startswith("recall_system@000000000000 -> recall_system@")


def test_prompt_version_changes_with_the_template(tmp_path: Path) -> None:
    import memory_core.prompts as prompts

    before = prompts.prompt_version("recall_system")
    copy = tmp_path / "prompts"
    copy.mkdir()
    for p in prompts.PROMPT_DIR.glob("*.j2"):
        (copy / p.name).write_text(p.read_text())
    (copy / "recall_system.j2").write_text((copy / "recall_system.j2").read_text() + "\nBe brief.")
    changed = prompts.prompt_version("recall_system", copy)  # a system's own template directory
    assert changed != before
    assert changed.split("@")[0] == "recall_system"
    rendered = prompts.render_prompt("recall_system", copy, limit=5)
    assert rendered.version == changed
    assert rendered.text.endswith("Be brief.")
    assert prompts.all_prompt_versions(copy)["recall_system"] == changed
    assert prompts.prompt_version("recall_system") == before  # the file system's directory is untouched


@pytest.mark.slow
def test_response_format_choice() -> None:
    request = recall_request("q", DOCS, limit=5, timeout_s=5)
    local = LiteLLMModel("openai/smollm2").response_format(request)
    assert local["type"] == "json_object"
    assert local["schema"]["properties"]["selected_memories"]["items"]["enum"] == ["feedback/terse.md",
                                                                                   "project/freeze.md"]
    hosted = LiteLLMModel("gpt-4o-mini").response_format(request)
    assert hosted["type"] == "json_schema"


@pytest.mark.slow
def test_adapter_errors_become_model_errors() -> None:
    request = ModelRequest("p", (Message("user", "hi"),), RECALL_SCHEMA, 5.0, "v")
    model = LiteLLMModel("openai/fake")
    with pytest.raises(ModelError) as err:
        model.query(request, mock_response={"choices": [{"message": {"role": "assistant", "content": "nope"}}]})
    assert err.value.reason == "invalid_json", err.value
    good = model.query(request, mock_response={"choices": [{"message": {"role": "assistant",
                                                                        "content": '```json\n{"selected_memories": []}\n```'}}],
                                               "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}})
    assert (good.data, good.input_tokens, good.output_tokens) == ({"selected_memories": []}, 7, 3)


@pytest.mark.slow
def test_cost_when_litellm_knows_the_price() -> None:
    request = ModelRequest("p", (Message("user", "hi"),), RECALL_SCHEMA, 5.0, "v")
    mock = {"choices": [{"message": {"role": "assistant", "content": '{"selected_memories": []}'}}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}}
    priced = LiteLLMModel("gpt-4o-mini").query(request, mock_response={**mock, "model": "gpt-4o-mini"})
    assert priced.cost_usd is not None
    assert priced.cost_usd > 0
    assert LiteLLMModel("openai/smollm2-local").query(request, mock_response=mock).cost_usd is None


class _Slow(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        time.sleep(1.5)
        self.send_response(500)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return None


@pytest.mark.slow
def test_timeout_against_a_slow_local_server_is_a_timeout_error() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        model = LiteLLMModel("openai/slow", api_base=f"http://127.0.0.1:{server.server_port}/v1", timeout_scale=0.05)
        request = ModelRequest("auto-memory-recall", (Message("user", "hi"),), RECALL_SCHEMA, 5.0, "v")
        with pytest.raises(ModelError) as err:
            model.query(request)
        assert err.value.reason in ("timeout", "provider")
        assert "slow" in str(err.value)
    finally:
        server.shutdown()
        server.server_close()


def test_lenient_parse() -> None:
    assert parse_json_lenient('Here you go: {"a": [1]} thanks') == {"a": [1]}
    with pytest.raises(ModelError):
        parse_json_lenient("[1, 2]")


@pytest.mark.llm
def test_local_model_records_a_valid_recall_selection(tmp_path: Path) -> None:
    """Opt-in (--run-llm): needs scripts/local-model.sh serve (or MEMHARNESS_LOCAL_MODEL_URL)."""
    base = os.environ.get("MEMHARNESS_LOCAL_MODEL_URL", "http://127.0.0.1:8765/v1")
    adapter = LiteLLMModel("openai/smollm2-135m-instruct", api_base=base, timeout_scale=12)
    recorder = CassetteModel(Cassette.open(tmp_path), adapter.name, "record", adapter, adapter=adapter)
    picked = select_by_model("how should you format answers for me?", DOCS, model=recorder)
    assert {d.relative_path for d in picked} <= {d.relative_path for d in DOCS}
    entry = json.loads((tmp_path / "cassette.jsonl").read_text().splitlines()[0])
    assert entry["response"]["input_tokens"] > 0
    assert parse_json_lenient(entry["response"]["text"])["selected_memories"] is not None
