"""The live local-model test: a real OpenAI-compatible server on 127.0.0.1 (``scripts/local-model.sh serve``),
named by ``MEMHARNESS_LIVE_API_BASE``. Without it the live tests skip with the reason; ``.ci/run`` starts the server,
sets the variable and ``MEMHARNESS_LIVE_REQUIRED=1`` (then a missing variable fails instead of skipping).

The variables are read at import: the suite's autouse ``isolate_env`` fixture removes ``MEMHARNESS_*`` from each
test's environment.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.telemetry import otlp_spans

REPO = Path(__file__).resolve().parents[2]
API_BASE = os.environ.get("MEMHARNESS_LIVE_API_BASE", "").rstrip("/")
REQUIRED = os.environ.get("MEMHARNESS_LIVE_REQUIRED") == "1"
MODEL = os.environ.get("MEMHARNESS_LIVE_MODEL", "")
TIMEOUT_SCALE = os.environ.get("MEMHARNESS_LIVE_TIMEOUT_SCALE", "24")
# Shipped scenarios whose model path makes real calls (no scripted replies). The default is 4 short recall calls per
# run (about 10 s on an idle 2-core CPU); MEMHARNESS_LIVE_SCENARIOS widens it, e.g. with scenarios/model/real-extract.yaml
# and scenarios/model/real-dream.yaml (extraction and consolidation answers are ~85 tokens: minutes on a busy CPU).
SCENARIOS = os.environ.get("MEMHARNESS_LIVE_SCENARIOS",
                           "scenarios/recall/paraphrase-format.yaml scenarios/recall/type-feedback.yaml").split()
SKIP_REASON = ("LIVE MODEL TEST SKIPPED: MEMHARNESS_LIVE_API_BASE is not set. Start a local model with "
               "`scripts/local-model.sh install && scripts/local-model.sh serve smollm2 --port 8765` and run "
               "`MEMHARNESS_LIVE_API_BASE=http://127.0.0.1:8765/v1 pytest tests/live` (.ci/run does this)")


@dataclass(frozen=True)
class Live:
    api_base: str
    model: str
    scenarios: tuple[Path, ...]


@dataclass(frozen=True)
class Run:
    """One ``memharness run`` and its run directory."""

    code: int
    out: Path
    stdout: str
    stderr: str

    def jsonl(self, name: str) -> list[dict[str, Any]]:
        path = self.out / name
        assert path.exists(), f"{path} missing; stderr: {self.stderr[-2000:]}"
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    @property
    def probes(self) -> list[dict[str, Any]]:
        return self.jsonl("probes.jsonl")

    @property
    def summary(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.out / "summary.json").read_text(encoding="utf-8"))
        return data

    def spans(self) -> list[dict[str, Any]]:
        """Every span of traces.jsonl (OTLP JSON, one export per line), attributes flattened to a dict."""
        out = []
        for span in otlp_spans(self.jsonl("traces.jsonl")):
            attrs = {a["key"]: _otlp_value(a["value"]) for a in span.get("attributes", [])}
            out.append({**span, "attrs": attrs})
        return out

    def chat_spans(self) -> list[dict[str, Any]]:
        return [s for s in self.spans() if s["name"].startswith("chat ")]


def _otlp_value(value: Mapping[str, Any]) -> Any:
    if "intValue" in value:
        return int(value["intValue"])
    if "arrayValue" in value:
        return [_otlp_value(v) for v in value["arrayValue"].get("values", [])]
    return next(iter(value.values()), None)


def served_model(api_base: str) -> str:
    """The first model id the server lists at /models (the server's alias)."""
    try:
        with urllib.request.urlopen(f"{api_base}/models", timeout=120) as r:  # a busy server answers late
            data = json.loads(r.read())
    except (OSError, urllib.error.URLError, ValueError) as exc:
        pytest.fail(f"MEMHARNESS_LIVE_API_BASE={api_base} is set but {api_base}/models does not answer: {exc}")
    ids = [m.get("id") for m in data.get("data", []) if m.get("id")]
    if not ids:
        pytest.fail(f"{api_base}/models lists no model: {data}")
    return str(ids[0])


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_cli(args: Sequence[str | Path], out: Path, *, timeout: float = 900) -> Run:
    """``memharness run ARGS --out OUT --no-gates`` in a subprocess, with the suite's isolated environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "QWEN_", "MEMHARNESS_"))}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    cmd = [sys.executable, "-m", "harness", "run", *map(str, args), "--out", str(out), "--no-gates"]
    p = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    return Run(p.returncode, out, p.stdout, p.stderr)


@pytest.fixture(scope="session")
def live() -> Live:
    if not API_BASE:
        if REQUIRED:
            pytest.fail("MEMHARNESS_LIVE_REQUIRED=1 but MEMHARNESS_LIVE_API_BASE is not set: the live test must run")
        pytest.skip(SKIP_REASON)
    if not API_BASE.startswith(("http://127.0.0.1:", "http://localhost:")):
        pytest.fail(f"MEMHARNESS_LIVE_API_BASE={API_BASE}: the live test only talks to a local server on 127.0.0.1")
    model = MODEL or f"openai/{served_model(API_BASE)}"
    scenarios = tuple(REPO / s for s in SCENARIOS)
    missing = [str(s) for s in scenarios if not s.exists()]
    assert not missing, f"MEMHARNESS_LIVE_SCENARIOS names missing files: {missing}"
    return Live(API_BASE, model, scenarios)
