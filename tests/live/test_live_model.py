"""The model strategy against a real local model server, live through litellm (``openai/<alias>`` + ``api_base``).

Asserts structure, fallbacks and telemetry, never the model's text: a run completes, every operation row either
used the model or fell back to the heuristic with a reason, the chat spans carry gen_ai attributes and token
counts; a recording replays to identical probe rows; an unreachable server becomes the heuristic fallback.
Skipped unless MEMHARNESS_LIVE_API_BASE is set (see conftest.py); .ci/run sets it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.live.conftest import REPO, TIMEOUT_SCALE, Live, Run, closed_port, run_cli

pytestmark = pytest.mark.slow  # talks to a live local model server

REASON = re.compile(r"^[a-z][a-z_]*$")
TIMING = {"duration_ms"}


def ops(run: Run) -> list[dict[str, Any]]:
    """Probe rows of memory operations (the final ``check`` row repeats the last operation's counters)."""
    rows = [p for p in run.probes if p["kind"] != "check"]
    assert rows, f"no operation rows in {run.out}/probes.jsonl"
    return rows


def assert_completed(run: Run, live: Live, mode: str) -> None:
    # 0, or 1 when a weak model's picks fail a scenario's expectations: both are completed runs; 2 is an error
    assert run.code in (0, 1), f"memharness exited {run.code}: {run.stderr[-3000:]}"
    results = run.jsonl("results.jsonl")
    assert {r["scenario"] for r in results} == {s.stem for s in live.scenarios}
    assert all(r["status"] in ("passed", "failed") and r["strategy"] == "model" for r in results), results
    meta = run.summary["meta"]
    assert (meta["model"], meta["model_mode"]) == (live.model, mode)


def assert_model_or_fallback(rows: list[dict[str, Any]]) -> None:
    for p in rows:
        where = f"{p['scenario']} step {p['step']} ({p['kind']})"
        assert p["strategy"] == "model", where
        assert p["tokens"]["calls"] >= 1, f"{where}: the model was never asked"
        reason = p.get("fallback_reason")
        if reason is None:
            assert p["strategy_used"] in ("model", "none"), f"{where}: no fallback reason but used {p['strategy_used']}"
        else:
            assert REASON.match(reason), f"{where}: fallback reason {reason!r}"
            assert p["strategy_used"] not in ("model", "none"), f"{where}: fell back ({reason}) but reports the model"


def assert_chat_spans(run: Run, live: Live, rows: list[dict[str, Any]], *, replayed: bool) -> list[dict[str, Any]]:
    chats = run.chat_spans()
    assert len(chats) == sum(p["tokens"]["calls"] for p in rows), "one chat span per model call"
    for s in chats:
        a = s["attrs"]
        assert s["name"] == f"chat {live.model}"
        assert s["kind"] == "SPAN_KIND_CLIENT"
        assert a["gen_ai.operation.name"] == "chat"
        assert a["gen_ai.request.model"] == live.model
        assert a["gen_ai.provider.name"] == "openai"
        assert a["memory.llm.purpose"].startswith("auto-memory-")
        assert bool(a.get("memory.llm.replayed")) is replayed
        if "error.type" in a:
            assert s["status"].get("code") == "STATUS_CODE_ERROR"
            assert s["status"].get("message")
        else:
            assert a["gen_ai.usage.input_tokens"] > 0, a
            assert a["gen_ai.usage.output_tokens"] > 0, a
            assert a["gen_ai.response.model"]
    return chats


def comparable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Probe rows without timing: wall-clock durations and the replayed-call counter (0 live, = calls replayed)."""
    return [{**{k: v for k, v in p.items() if k not in TIMING},
             "tokens": {k: v for k, v in p["tokens"].items() if k != "replayed"}} for p in rows]


def _model_args(live: Live, *extra: str) -> list[str]:
    # the file core's model path against a real model (a plain run would replay the SQLite system as well)
    return [*map(str, live.scenarios), "--system", "reference", "--strategy", "model", "--model", live.model,
            "--timeout-scale", TIMEOUT_SCALE, *extra]


@pytest.fixture(scope="module")
def live_run(live: Live, tmp_path_factory: pytest.TempPathFactory) -> Run:
    cassettes = tmp_path_factory.mktemp("live-cassettes")
    run = run_cli(_model_args(live, "--live", "--api-base", live.api_base, "--cassettes", str(cassettes)),
                  tmp_path_factory.mktemp("live-run"))
    assert not any(cassettes.iterdir()), "--live stores nothing"
    return run


@pytest.fixture(scope="module")
def recorded(live: Live, tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, Path]:
    cassettes = tmp_path_factory.mktemp("recorded-cassettes")
    run = run_cli(_model_args(live, "--record", "--api-base", live.api_base, "--cassettes", str(cassettes)),
                  tmp_path_factory.mktemp("record-run"))
    return run, cassettes


def test_live_run_uses_the_model_or_falls_back_with_a_reason(live: Live, live_run: Run) -> None:
    assert_completed(live_run, live, "live")
    rows = ops(live_run)
    assert_model_or_fallback(rows)
    assert all(p["tokens"]["replayed"] == 0 for p in rows), "a --live run replays nothing"
    assert "recall" in {p["kind"] for p in rows}
    # a reachable server answers at least one call validly: the model path itself was exercised, not only fallbacks
    answered = [p for p in rows if p["fallback_reason"] is None]
    assert answered, f"every call fell back: {[(p['scenario'], p['step'], p['fallback_reason']) for p in rows]}"


def test_live_run_has_chat_spans_with_gen_ai_attributes_and_tokens(live: Live, live_run: Run) -> None:
    rows = ops(live_run)
    chats = assert_chat_spans(live_run, live, rows, replayed=False)
    ok = [s for s in chats if "error.type" not in s["attrs"]]
    assert ok, "no successful chat span"
    # the probe rows' token counters add up to the spans' usage
    assert sum(p["tokens"]["input"] for p in rows) == sum(s["attrs"].get("gen_ai.usage.input_tokens", 0) for s in chats)
    assert sum(p["tokens"]["output"] for p in rows) == sum(s["attrs"].get("gen_ai.usage.output_tokens", 0) for s in chats)
    metrics = live_run.summary["strategies"]["model"]["metrics"]
    assert metrics["llm.tokens.input"] > 0
    assert metrics["llm.tokens.output"] > 0
    assert metrics["llm.replayed"] == 0
    # a fallback is visible on the operation span too
    for s in live_run.spans():
        if s["attrs"].get("memory.fallback_reason"):
            assert REASON.match(s["attrs"]["memory.fallback_reason"])


def test_record_then_replay_gives_identical_probes(live: Live, recorded: tuple[Run, Path],
                                                   tmp_path_factory: pytest.TempPathFactory) -> None:
    record, cassettes = recorded
    assert_completed(record, live, "record")
    rows = ops(record)
    assert_model_or_fallback(rows)
    chats = assert_chat_spans(record, live, rows, replayed=False)
    entries = [json.loads(line) for line in (cassettes / "cassette.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(entries) == len(chats), "every model call of the recording is in the cassette"
    assert {e["model"] for e in entries} == {live.model}
    # replay offline: the api_base points at a closed port, so any call that is not replayed would fall back
    replay = run_cli(_model_args(live, "--api-base", f"http://127.0.0.1:{closed_port()}/v1", "--cassettes",
                                 str(cassettes)), tmp_path_factory.mktemp("replay-run"))
    assert_completed(replay, live, "replay")
    replayed_rows = ops(replay)
    assert all(p["tokens"]["replayed"] == p["tokens"]["calls"] for p in replayed_rows), "every call replayed"
    assert_chat_spans(replay, live, replayed_rows, replayed=True)
    assert comparable(replay.probes) == comparable(record.probes)
    assert replay.code == record.code


def test_unreachable_api_base_falls_back_to_the_heuristic(live: Live, tmp_path_factory: pytest.TempPathFactory) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    run = run_cli(_model_args(live, "--live", "--api-base", url, "--cassettes",
                              str(tmp_path_factory.mktemp("unreachable-cassettes"))),
                  tmp_path_factory.mktemp("unreachable-run"))
    assert_completed(run, live, "live")
    rows = ops(run)
    assert_model_or_fallback(rows)
    # the adapter tags a refused connection as a provider error; the span's message names the connection failure
    assert {p["fallback_reason"] for p in rows} <= {"connection", "provider"}, rows
    assert all(p["fallback_reason"] and p["strategy_used"] == "heuristic" for p in rows)
    assert all(p["tokens"]["input"] == 0 and p["tokens"]["output"] == 0 for p in rows)
    chats = assert_chat_spans(run, live, rows, replayed=False)
    assert chats
    assert all(s["attrs"]["error.type"] in ("connection", "provider") for s in chats)
    assert all("connection" in s["status"]["message"].lower() for s in chats), [s["status"] for s in chats]
    metrics = run.summary["strategies"]["model"]["metrics"]
    assert metrics["recall.fallbacks"] == sum(p["kind"] == "recall" for p in rows)


def test_memharness_record_fills_a_set_once_then_has_nothing_left(live: Live, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The prompt-edit loop's recording step: `memharness record` takes model, endpoint and timeouts from the set's
    cassette-meta.json, records what the set lacks, and a second call finds nothing missing (resumable)."""
    shelf = tmp_path_factory.mktemp("record-set")
    (shelf / "cassette-meta.json").write_text(json.dumps(
        {"model": live.model, "api_base": live.api_base, "timeout_scale": float(TIMEOUT_SCALE)}), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "QWEN_", "MEMHARNESS_"))}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

    def record() -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "harness", "record", *map(str, live.scenarios), "--system", "reference",
               "--cassettes", str(shelf), "--out", str(tmp_path_factory.mktemp("record-cmd"))]
        return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=900, check=False)

    first = record()
    assert first.returncode in (0, 1), first.stderr[-3000:]
    entries = (shelf / "cassette.jsonl").read_text(encoding="utf-8").splitlines()
    assert entries
    assert f"record: {len(entries)} new call(s) recorded into {shelf}" in first.stderr
    again = record()
    assert again.returncode == first.returncode, again.stderr[-3000:]
    assert f"record: 0 new call(s) recorded into {shelf} ({len(entries)} in all" in again.stderr
    assert (shelf / "cassette.jsonl").read_text(encoding="utf-8").splitlines() == entries
