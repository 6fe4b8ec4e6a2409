"""docs/prompt-regression.md, run as written against a real local model (CI: SmolLM2 on 127.0.0.1).

A copy of the project (harness, memory_core, the live scenarios, a gates file with the baseline gates and a
cassette set whose cassette-meta.json names the live server) goes through the loop: record → last good run →
edit a template → the run is INCOMPLETE and names the stale template → `memharness record` fills only what
changed → the run against the last good one gives a verdict; an unchanged rerun says there is no change.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.live.conftest import REPO, TIMEOUT_SCALE, Live

pytestmark = pytest.mark.slow  # talks to a live local model server

GATES = """
[[gate]]
metric = "scenarios.errors"
max = 0

[[gate]]
metric = "recall.f1"
max_drop = 0.0
vs = "baseline"
"""


def _cli(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "QWEN_", "MEMHARNESS_"))}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    env.pop("PYTHONPATH", None)  # `python -m harness` from the copy imports the copy's harness and memory_core
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=work, env=env, capture_output=True,
                          text=True, timeout=900, check=False)


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def test_the_prompt_edit_loop_end_to_end(live: Live, tmp_path: Path) -> None:
    work = tmp_path / "project"
    for package in ("harness", "memory_core"):
        shutil.copytree(REPO / package, work / package, ignore=shutil.ignore_patterns("__pycache__"))
    suite = work / "scenarios"
    (suite / "recall").mkdir(parents=True)
    for scenario in live.scenarios:
        shutil.copy(scenario, suite / "recall" / scenario.name)
    (suite / "gates.toml").write_text(GATES, encoding="utf-8")
    cassettes = suite / "cassettes"
    cassettes.mkdir()
    (cassettes / "cassette-meta.json").write_text(json.dumps(
        {"model": live.model, "api_base": live.api_base, "timeout_scale": float(TIMEOUT_SCALE)}), encoding="utf-8")
    run = ("run", "scenarios", "--system", "reference", "--strategy", "heuristic,model")

    # record, then the last good run (offline: every call is answered from the set)
    first = _cli(work, "record", "scenarios", "--system", "reference", "--out", "reports/record")
    assert first.returncode in (0, 1), first.stderr[-3000:]
    recorded = _lines(cassettes / "cassette.jsonl")
    assert recorded
    good = _cli(work, *run, "--out", "reports/last-good")
    # 0, or 1 when a weak model's answer was invalid and the step fell back (a fallback fails unless expected)
    assert good.returncode in (0, 1), good.stdout[-3000:] + good.stderr[-2000:]

    # edit a template: the run is INCOMPLETE and names the stale template, old version -> new
    template = work / "memory_core" / "files" / "prompts" / "recall_system.j2"
    template.write_text(template.read_text(encoding="utf-8") + "\nPrefer memories about the user's own workflow.\n",
                        encoding="utf-8")
    stale = _cli(work, *run, "--out", "reports/stale")
    assert stale.returncode == 2, stale.stdout[-3000:]
    assert "INCOMPLETE" in stale.stdout
    assert "stale: template changed (recall_system@" in stale.stdout
    assert "record it with `memharness record`" in stale.stdout

    # record only what changed (every old entry is kept), resumable: a second call finds nothing missing
    again = _cli(work, "record", "scenarios", "--system", "reference", "--out", "reports/record2")
    assert again.returncode in (0, 1), again.stderr[-3000:]
    now = _lines(cassettes / "cassette.jsonl")
    added = len(now) - len(recorded)
    assert now[: len(recorded)] == recorded
    assert added > 0
    assert f"record: {added} new call(s) recorded" in again.stderr
    assert "record: 0 new call(s)" in _cli(work, "record", "scenarios", "--system", "reference", "--out",
                                           "reports/record3").stderr

    # the verdict against the last good run: complete, compared, and the exit code is the gates' word
    verdict = _cli(work, *run, "--baseline", "reports/last-good", "--out", "reports/candidate")
    assert verdict.returncode in (0, 1), verdict.stdout[-3000:] + verdict.stderr[-2000:]
    summary = json.loads((work / "reports" / "candidate" / "summary.json").read_text(encoding="utf-8"))
    assert summary["complete"] is True
    assert "model recall.f1 drop vs baseline <= 0.0" in [g["name"] for g in summary["gates"]]
    assert "vs baseline: model: " in verdict.stdout

    # a rerun that changes nothing says so, and passes
    same = _cli(work, *run, "--baseline", "reports/candidate", "--out", "reports/same")
    assert same.returncode in (0, 1), same.stdout[-3000:]
    assert "GATE FAILED" not in same.stdout
    assert "vs baseline: model: no detectable change" in same.stdout
    assert "worse" not in same.stdout.split("\n\n")[0]
