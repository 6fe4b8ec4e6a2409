"""The latency the harness reports is the system's: the timer wraps exactly the operation, never span export."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

from harness.replay import RecallResult, replay
from harness.scenario import load_scenario
from tests.example_system import ExampleSystem
from tests.harness.conftest import SCENARIOS, OTel

SLEEP_S = 0.04


class Sleepy(ExampleSystem):
    def recall(self, query: str, *, now: datetime, limit: int | None, excluded: Sequence[str],
               strategy: str) -> RecallResult:
        time.sleep(SLEEP_S)
        return super().recall(query, now=now, limit=limit, excluded=excluded, strategy=strategy)


class SlowExport(SpanProcessor):
    """A span processor that takes 0.1 s per finished span (an exporter doing synchronous work)."""

    def on_end(self, span: ReadableSpan) -> None:
        time.sleep(0.1)


def _factory(workdir: Path, clock: Any, model: Any, events: Any) -> Sleepy:
    return Sleepy()


@pytest.mark.parametrize("slow_export", [False, True])
def test_duration_is_the_operation_not_the_exporter(otel: OTel, slow_export: bool) -> None:
    if slow_export:
        otel.tracer_provider.add_span_processor(SlowExport())
    scenario = load_scenario(SCENARIOS / "recall" / "type-feedback.yaml")
    result = replay(scenario, strategy="heuristic", telemetry=otel.telemetry, system_factory=_factory)
    [probe] = [p for p in result.probes if p.kind == "recall"]
    # placement, not speed: an exporter inside the timer would add its 100 ms; 75 ms of slack absorbs a loaded box
    assert SLEEP_S * 1000 <= probe.duration_ms < SLEEP_S * 1000 + 75
    [span] = [s for s in otel.spans.get_finished_spans() if s.name == "search_memory"]
    assert span.end_time is not None
    assert span.start_time is not None
    assert (span.end_time - span.start_time) / 1e6 == pytest.approx(probe.duration_ms, abs=0.01)
    before = time.time_ns()
    assert before - 120e9 < span.start_time <= before  # real wall clock, not the scenario's fake March 2026
    assert span.attributes is not None
    assert span.attributes["memory.scenario.time"].startswith("2026-03-02T09:00:00")


def test_replay_from_cassettes_does_not_import_litellm(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = ("import sys; from harness.cli import main; "
            f"rc = main(['run', {str(SCENARIOS / 'model' / 'model-order.yaml')!r}, '--strategy', 'model', "
            f"'--no-gates', '--out', {str(tmp_path)!r}], environ={{}}); "
            "print(rc, 'litellm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split()[-2:] == ["0", "False"]


class SlowToBuild(ExampleSystem):
    """Its construction and each seed take time: the system's work, which the harness must not bill to itself."""

    def __init__(self) -> None:
        time.sleep(SLEEP_S)
        super().__init__()

    def seed(self, memory: Any, *, mtime: datetime) -> None:
        time.sleep(SLEEP_S)
        super().seed(memory, mtime=mtime)


def test_system_time_counts_every_call_into_the_system_not_only_operations(otel: OTel) -> None:
    from harness.evaluation._summary import overhead

    scenario = load_scenario(SCENARIOS / "recall" / "multi-fact.yaml")
    result = replay(scenario, strategy="heuristic", telemetry=otel.telemetry,
                    system_factory=lambda w, c, m, e: SlowToBuild())
    seeds = len(scenario.memories)
    assert result.system_ms is not None
    assert result.system_ms >= 1000 * SLEEP_S * (1 + seeds)  # the factory and every seed
    assert result.system_ms <= result.duration_ms
    graded = sum(p.duration_ms for p in result.probes if p.graded)
    assert result.system_ms > graded + 1000 * SLEEP_S * seeds * 0.9  # more than the graded operations alone
    split = overhead([result])
    assert split["harness.system_ms"] == round(result.system_ms, 3)
    assert split["harness.overhead_ms"] == round(result.duration_ms - result.system_ms, 3)
