"""The SQLite system's ``access_count`` and ``importance`` seed fields (generated).

``importance`` must be a number from 0 to 1 (spec §2.1/§5: a score the rerank weights and decay multiplies; round
13: ``true``, -1 and 1e30 were taken, the first as 1.0), through the store's seed and through ``via: add_memory``.

What it is for: ``scenarios/sqlite/life-access-count-past-124`` recalls a memory seeded at 130 and reads 131, 132
(spec §7 Q13 fixed: a recall is an access), which a count capped or clamped on its way back would not reach.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import ScenarioInputError
from harness.replay import load_factory
from harness.scenario import SeedMemory
from memory_core.clock import FixedClock

NOW = datetime(2026, 3, 2, 9, tzinfo=UTC)
VALUES = st.one_of(st.integers(-5, 2**64), st.booleans(), st.floats(), st.text(max_size=4), st.none())


def _seeded(root: Path, fields: dict[str, Any], *, mtime: datetime = NOW) -> tuple[str, tuple[Any, ...] | None]:
    """(the refusal, "" if none; the row's access_count, importance_score and updated_at, if one was written)."""
    system = load_factory("sqlite")(root, FixedClock(NOW), None, None)
    try:
        system.seed(SeedMemory("project/proxy.md", type="project", name="proxy", body="The proxy listens on port 8443",
                               system=fields), mtime=mtime)
    except ScenarioInputError as exc:
        return str(exc), None
    finally:
        system.close()
    with sqlite3.connect(root / "openakita.db") as conn:
        return "", conn.execute("SELECT access_count, importance_score, updated_at FROM memories").fetchone()


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(value=VALUES)
def test_access_count_is_a_whole_number_the_row_carries_or_a_located_refusal(
        value: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    refused, row = _seeded(tmp_path_factory.mktemp("seed"), {"access_count": value} if value is not None else {},
                           mtime=NOW - timedelta(days=2))
    wanted = value is None or (type(value) is int and 0 <= value < 2**62)
    assert bool(refused) != wanted, (value, refused)
    if refused:
        assert refused.startswith("memory project/proxy.md: access_count must be a whole number")
        return
    assert row is not None
    count, _, updated = row
    assert count == (value or 0)
    assert updated.startswith("2026-02-28T09:00:00")  # the seed's moment, not the update's


def test_the_old_adapter_refused_it_as_unknown(tmp_path: Path) -> None:
    """Guard on the field list: a name no shipped system reads is refused, this one is read."""
    system = load_factory("sqlite")(tmp_path, FixedClock(NOW), None, None)
    try:
        system.seed(SeedMemory("a.md", body="x", system={"access_count": 3}), mtime=NOW)
        with pytest.raises(ScenarioInputError, match="unknown system field"):
            system.seed(SeedMemory("b.md", body="y", system={"access_counts": 3}), mtime=NOW)
    finally:
        system.close()


IMPORTANCE = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 3), st.booleans(),
                       st.text(max_size=4), st.sampled_from([0, 1, 0.0, 1.0, 0.5, 1e30, -1e-9]))


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(value=IMPORTANCE, via=st.booleans())
def test_importance_is_a_score_from_0_to_1_or_a_located_refusal(value: Any, via: bool,
                                                                tmp_path_factory: pytest.TempPathFactory) -> None:
    fields: dict[str, Any] = {"importance": value, **({"via": "add_memory"} if via else {})}
    refused, row = _seeded(tmp_path_factory.mktemp("imp"), fields)
    wanted = type(value) in (int, float) and 0 <= value <= 1
    assert bool(refused) != wanted, (value, refused)
    if refused:
        assert refused.startswith("memory project/proxy.md: importance must be a number from 0 to 1")
        return
    assert row is not None
    assert row[1] == pytest.approx(float(value))
