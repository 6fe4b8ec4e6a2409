"""A real Arize Phoenix for the telemetry acceptance test (issue 15), from its own venv via scripts/phoenix.sh.

Phoenix runs on 127.0.0.1 with free ports and a temporary working directory, and is stopped by its PID at the end
of the session. Without an installed Phoenix the tests skip loudly, unless ``MEMHARNESS_REQUIRE_PHOENIX`` is set
(``.ci/run`` sets it), in which case a missing or broken Phoenix is a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from harness.reporting import read_jsonl
from harness.telemetry import otlp_spans

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "phoenix.sh"
SCENARIOS = REPO / "scenarios"
REQUIRE_ENV = "MEMHARNESS_REQUIRE_PHOENIX"
PROJECT = "memharness-phoenix-ci"
# Shipped scenarios replayed with --strategy heuristic,model (model calls come from scenarios/cassettes).
SHIPPED = ("recall/multi-fact.yaml", "recall/abstain-unrelated.yaml", "model/real-extract.yaml",
           "model/fallback-invalid-json.yaml", "dream/cross-file-dedupe.yaml")
FAILING = "deliberately-failing"


def _required() -> bool:
    return os.environ.get(REQUIRE_ENV, "").strip().lower() not in ("", "0", "false", "no")


def _unavailable(reason: str) -> None:
    if _required():
        pytest.fail(f"{REQUIRE_ENV} is set but {reason}", pytrace=False)
    pytest.skip(f"!!! PHOENIX LIVE TEST NOT RUN: {reason}. Install it with `scripts/phoenix.sh install`, "
                f"or set {REQUIRE_ENV}=1 to make this a failure !!!")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read())


@dataclass
class Phoenix:
    base: str
    env: dict[str, str]
    workdir: Path

    def spans(self, project: str) -> list[dict[str, Any]]:
        """Every span of ``project`` via ``GET /v1/projects/{project}/spans`` (cursor pagination, 1000 a page)."""
        out: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            query = {"limit": "1000", **({"cursor": cursor} if cursor else {})}
            page = get_json(f"{self.base}/v1/projects/{urllib.parse.quote(project)}/spans?{urllib.parse.urlencode(query)}")
            out.extend(page["data"])
            cursor = page.get("next_cursor")
            if not cursor:
                return out

    def projects(self) -> dict[str, str]:
        """Project name -> id (``GET /v1/projects``)."""
        return {p["name"]: p["id"] for p in get_json(f"{self.base}/v1/projects")["data"]}


def _script(command: str, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), command], env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    if not shutil.which("bash") or not SCRIPT.exists():
        _unavailable(f"{SCRIPT} or bash is missing")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_"))}
    if _script("python", env, 30).returncode != 0:
        _unavailable("Phoenix is not installed (no venv under "
                     f"{os.environ.get('MEMHARNESS_PHOENIX_DIR', '~/.cache/memharness/phoenix')})")
    workdir = tmp_path_factory.mktemp("phoenix-home")
    port, grpc_port = _free_port(), _free_port()
    env.update(PHOENIX_PORT=str(port), PHOENIX_GRPC_PORT=str(grpc_port), PHOENIX_WORKING_DIR=str(workdir))
    env.setdefault("MEMHARNESS_PHOENIX_WAIT", "240")  # ~20 s on an idle 2-core machine; far more under load
    # From here on Phoenix is installed: a server that does not come up is a failure, never a skip.
    served = _script("serve", env, 60)
    if served.returncode != 0:
        pytest.fail(f"`phoenix.sh serve` failed: {served.stderr.strip()[-500:]}", pytrace=False)
    try:
        ready = _script("wait", env, float(env["MEMHARNESS_PHOENIX_WAIT"]) + 30)
        if ready.returncode != 0:
            log = workdir / "phoenix.log"
            tail = log.read_text(errors="replace")[-1500:] if log.exists() else "(no log)"
            pytest.fail(f"Phoenix did not become ready: {ready.stderr.strip()[-500:]}\n{tail}", pytrace=False)
        sys.stderr.write(ready.stderr)
        yield Phoenix(f"http://127.0.0.1:{port}", env, workdir)
    finally:
        _script("stop", env, 60)


@dataclass
class Run:
    """One ``memharness run`` exported into Phoenix, and what Phoenix holds afterwards."""

    out: Path
    returncode: int
    stderr: str
    window: tuple[datetime, datetime]
    summary: dict[str, Any]
    results: list[dict[str, Any]]
    spans: list[dict[str, Any]] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return str(self.summary["run_id"])

    def spans_of(self, trace_id: str) -> list[dict[str, Any]]:
        return [s for s in self.spans if s["context"]["trace_id"] == trace_id]


def _write_failing_scenario(directory: Path) -> Path:
    """A copy of a shipped scenario with one expectation made false (the prompt block must contain a phrase no
    memory has: a hard check under any strategy, even when a real model chose, whose misses are quality misses), so
    both strategies fail it on both systems."""
    text = (SCENARIOS / "recall" / "multi-fact.yaml").read_text(encoding="utf-8")
    anchor = "      expect: [real-db, fixture]\n"
    assert anchor in text, "recall/multi-fact.yaml changed; update the deliberately failing copy"
    path = directory / f"{FAILING}.yaml"
    path.write_text(text.replace(anchor, anchor + "      prompt_contains: [\"no memory says this\"]\n"), encoding="utf-8")
    return path


def _memharness() -> list[str]:
    exe = Path(sys.executable).parent / "memharness"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "harness"]


def run_memharness(phoenix: Phoenix, args: list[str], out: Path) -> subprocess.CompletedProcess[str]:
    """``memharness run ARGS --out OUT`` in a subprocess, exporting over OTLP/HTTP into ``phoenix``'s PROJECT."""
    env = dict(phoenix.env)
    env.update(OTEL_EXPORTER_OTLP_ENDPOINT=phoenix.base, OTEL_RESOURCE_ATTRIBUTES=f"openinference.project.name={PROJECT}",
               LITELLM_LOCAL_MODEL_COST_MAP="True")
    cmd = [*_memharness(), "run", *args, "--cassettes", str(SCENARIOS / "cassettes"), "--out", str(out), "--no-gates"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False, cwd=REPO)
    if not (out / "summary.json").exists():
        pytest.fail(f"memharness run wrote no summary (exit {proc.returncode}): {proc.stderr[-2000:]}", pytrace=False)
    return proc


def wait_for_spans(phoenix: Phoenix, expected: int, timeout: float = 30.0) -> list[dict[str, Any]]:
    """PROJECT's spans once Phoenix holds ``expected`` of them, or once the count stops growing (it ingests
    asynchronously); bounded by ``timeout``."""
    deadline, last, spans = time.monotonic() + timeout, -1, []
    while time.monotonic() < deadline:
        spans = phoenix.spans(PROJECT) if PROJECT in phoenix.projects() else []
        if len(spans) >= expected or (spans and len(spans) == last):
            break
        last = len(spans)
        time.sleep(1.0)
    return spans


@pytest.fixture(scope="session")
def exported_run(phoenix: Phoenix, tmp_path_factory: pytest.TempPathFactory) -> Run:
    failing = _write_failing_scenario(tmp_path_factory.mktemp("suite"))
    out = tmp_path_factory.mktemp("run")
    start = datetime.now(UTC)
    proc = run_memharness(phoenix, [*(str(SCENARIOS / p) for p in SHIPPED), str(failing), "--strategy", "heuristic,model"],
                          out)
    end = datetime.now(UTC)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    results = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines() if line]
    run = Run(out, proc.returncode, proc.stderr, (start, end), summary, results)
    expected = len(otlp_spans(read_jsonl(out / "traces.jsonl")))
    run.spans = wait_for_spans(phoenix, expected)
    (out / "phoenix-spans.json").write_text(json.dumps(run.spans, indent=1), encoding="utf-8")
    return run
