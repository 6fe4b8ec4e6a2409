"""Shared fixtures: a fixed clock, both stores, an isolated environment, Hypothesis profiles."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from memory_core.clock import FixedClock
from memory_core.files.store import FSYNC_ENV, FileStore, InMemoryStore, Store

settings.register_profile("dev", max_examples=10, deadline=None)  # quick local runs; .ci/run uses "ci"
settings.register_profile(
    "ci", max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

T0 = datetime(2026, 4, 1, 8, 0, tzinfo=UTC)


pytest_plugins = ["tests._tiers"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-llm", action="store_true", default=False, help="run tests that need a real local model")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-llm"):
        return
    skip = pytest.mark.skip(reason="needs a real local model: pass --run-llm")
    for item in items:
        if "llm" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def isolate_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's memory, OTel or model settings; store writes skip fsync."""
    for name in list(os.environ):
        if name.startswith(("OTEL_", "QWEN_", "MEMHARNESS_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    # Throwaway directories need no fsync (the write stays atomic); tests of the durable path delete this.
    monkeypatch.setenv(FSYNC_ENV, "0")


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(T0)


@pytest.fixture(params=["memory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Path, clock: FixedClock) -> Iterator[Store]:
    if request.param == "memory":
        yield InMemoryStore(clock)
    else:
        yield FileStore(tmp_path / "state" / "memory", clock)
