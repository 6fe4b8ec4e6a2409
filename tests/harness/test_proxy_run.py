"""A system that calls its model through its own HTTP client, run by ``memharness run`` behind the model proxy: a
record run against an upstream fills ``proxy.jsonl``; a replay with no model anywhere reproduces the same probes;
a changed request is an unrecorded call that makes the run INCOMPLETE (exit 2) with the scenario and step named."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.replay import PROXY_FILE, PROXY_URL_ENV
from harness.system import RecallResult
from tests.example_system import ExampleSystem
from tests.harness.test_proxy import upstream


class ProxiedSystem(ExampleSystem):
    """The example system, but recall first asks its model (over HTTP, like a third-party library) which of the
    candidates to keep: the answer's ``keep`` list filters the heuristic ranking."""

    def __init__(self, base_url: str) -> None:
        super().__init__()
        self.base_url = base_url

    def recall(self, query: str, *, now: datetime, limit: int | None, excluded: Any, strategy: str) -> RecallResult:
        ranked = super().recall(query, now=now, limit=limit, excluded=excluded, strategy=strategy)
        body = {"model": "tiny", "temperature": 0,
                "messages": [{"role": "user", "content": json.dumps({"query": query, "ids": list(ranked.selected)})}]}
        request = urllib.request.Request(f"{self.base_url}/chat/completions", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as reply:
                answer = json.loads(json.loads(reply.read())["choices"][0]["message"]["content"])
        except urllib.error.HTTPError as exc:  # a 404 (unrecorded): the system fails, as a library's client would
            with exc:
                raise RuntimeError(f"model call failed: {exc.code}") from None
        kept = json.loads(answer["echo"])["ids"]
        return RecallResult(selected=tuple(kept), strategy="model")


def factory(workdir: Path, clock: Any, model: Any, events: Any) -> ProxiedSystem:
    return ProxiedSystem(os.environ[PROXY_URL_ENV])


factory.model_proxy = True  # type: ignore[attr-defined]

SCENARIO = """\
description: one recall through a system that asks its own model
tags: [portable]
facts: {tabs: {type: user, match: [tabs]}}
memories: [{path: user/tabs.md, type: user, name: Tabs, description: indentation, body: "prefers tabs"}]
steps:
  - recall: {query: "QUERY", expect: [tabs], expect_selected: [user/tabs.md]}
"""


def _suite(tmp_path: Path, query: str) -> Path:
    suite = tmp_path / "suite"
    (suite / "cassettes").mkdir(parents=True, exist_ok=True)
    (suite / "s.yaml").write_text(SCENARIO.replace("QUERY", query))
    return suite


def _run(suite: Path, out: Path, *extra: str) -> int:
    return main(["run", str(suite), "--system", "tests.harness.test_proxy_run:factory", "--no-gates",
                 "--cassettes", str(suite / "cassettes"), "--out", str(out), *extra], environ={})


def _probes(out: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (out / "probes.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if "duration" not in k and k != "trace_id"} for r in rows]


@pytest.mark.slow
def test_record_then_replay_offline_then_a_miss_names_the_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = _suite(tmp_path, "tabs or spaces")
    with upstream() as up:
        assert _run(suite, tmp_path / "rec", "--record", "--api-base", up) == 0
    assert len((suite / "cassettes" / PROXY_FILE).read_text().splitlines()) == 1
    assert _run(suite, tmp_path / "rep") == 0  # no upstream anywhere now
    recorded, replayed = _probes(tmp_path / "rec"), _probes(tmp_path / "rep")
    # the proxied call counts in its probe's tokens (llm.*), as the harness's own model calls do
    assert [p["tokens"]["calls"] for p in recorded] == [p["tokens"]["calls"] for p in replayed] == [1, 0]
    assert recorded[0]["tokens"]["input"] == replayed[0]["tokens"]["input"] == 7
    assert (recorded[0]["tokens"]["replayed"], replayed[0]["tokens"]["replayed"]) == (0, 1)
    assert [{**p, "tokens": {**p["tokens"], "replayed": 0}} for p in replayed] == recorded
    summary = json.loads((tmp_path / "rep" / "summary.json").read_text())
    assert next(iter(summary["strategies"].values()))["metrics"]["llm.calls"] == 1
    spans = [s for line in (tmp_path / "rep" / "traces.jsonl").read_text().splitlines()
             for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    by_id = {s["spanId"]: s for s in spans}
    [chat] = [s for s in spans if s["name"] == "chat tiny"]  # the proxied call, inside the recall that made it
    assert by_id[chat["parentSpanId"]]["name"] == "search_memory"  # the recall operation's span
    attributes = {a["key"]: next(iter(a["value"].values())) for a in chat["attributes"]}
    assert attributes["memory.proxy.outcome"] == "replayed"
    assert attributes["gen_ai.usage.input_tokens"] in (7, "7")
    capsys.readouterr()
    _suite(tmp_path, "tabs or spaces, really")  # a request no one recorded
    assert _run(suite, tmp_path / "miss") == 2
    out = capsys.readouterr()
    assert "step 0: unrecorded model call chat/completions (model tiny" in out.out + out.err
    assert PROXY_URL_ENV not in os.environ  # the worker stopped its proxy


def test_a_proxied_system_with_nothing_recorded_is_incomplete_not_a_hang(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    suite = _suite(tmp_path, "tabs")
    (suite / "cassettes").rmdir()  # no recording anywhere, no model server: the call is answered 404 at once
    code = main(["run", str(suite / "s.yaml"), "--system", "tests.harness.test_proxy_run:factory", "--no-gates",
                 "--out", str(tmp_path / "o")], environ={})
    out = capsys.readouterr()
    assert code == 2
    (line,) = [x for x in (out.out + out.err).splitlines() if x.startswith("ERROR: s [heuristic] ")]
    assert "s.yaml: step 0: unrecorded model call chat/completions" in line, line
