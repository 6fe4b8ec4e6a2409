"""Round 16a: a seeded SQLite memory's ``system.priority`` or ``system.duration`` outside the spec's values (§2.1:
transient, short_term, long_term, permanent — uppercase plants a §7 Q24 row; §3.3: permanent, 7d, 24h, session) is
the scenario's error, named at its line with the field and value. Before, ``priority: bogus`` was stored as written and
``duration: forever`` gave the row no expiry, both in silence. Generated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import examples
from tests.hostile_cli._support import SEEDED_SQLITE, cli

PRIORITIES = ("transient", "short_term", "long_term", "permanent")
DURATIONS = ("permanent", "7d", "24h", "session")
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Cf", "Zl", "Zp", "Co", "Cn")), max_size=12)


def _valid(field: str, value: object) -> bool:
    if field == "priority":
        return isinstance(value, str) and value in (*PRIORITIES, *(p.upper() for p in PRIORITIES))
    return value in DURATIONS


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(["priority", "duration"]),
       value=st.one_of(st.sampled_from([*PRIORITIES, *DURATIONS, *(p.upper() for p in PRIORITIES), "7D", "", "Short_Term"]),
                       TEXT, st.integers(-5, 5), st.booleans(), st.floats(allow_nan=False, allow_infinity=False)))
def test_a_priority_or_duration_the_spec_has_not_is_the_scenarios_located_error(
        field: str, value: object, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]) -> None:
    case = tmp_path_factory.mktemp("seed")
    (case / "s").mkdir()
    text = SEEDED_SQLITE.format(description="a seed field", system=f"{field}: {json.dumps(value, ensure_ascii=False)}")
    (case / "s" / "seed.yaml").write_text(text, encoding="utf-8")
    o = cli(["run", str(case / "s"), "--system", "sqlite", "--out", str(case / "o"), "--no-gates"], capsys)
    text = o.out + o.err
    assert "Traceback" not in text
    if _valid(field, value):
        assert o.code == 0, text
        return
    assert o.code != 0, text
    (line,) = [x for x in text.splitlines() if f"{field} must be one of" in x]
    assert "(line 9)" in line
    assert repr(value) in line


def test_a_valid_seed_field_plants_its_row(tmp_path: Path) -> None:
    """The values the spec has still plant rows as written (SHORT_TERM: the Q24 row)."""
    from datetime import UTC, datetime

    from harness.scenario import SeedMemory
    from harness.systems.sqlite import SqliteSystem
    from memory_core.clock import FixedClock
    from memory_core.sqlite import Quirks

    clock = FixedClock(datetime(2026, 3, 2, tzinfo=UTC))
    system = SqliteSystem(tmp_path, clock, None, None, Quirks.fixed())
    for i, (priority, duration) in enumerate(zip((*PRIORITIES, "SHORT_TERM"), (*DURATIONS, "7d"), strict=True)):
        memory = SeedMemory(path=f"project/m{i}.md", name=f"m{i}", type="project", body=f"billing fact {i}",
                            system={"priority": priority, "duration": duration})
        system.seed(memory, mtime=clock.now())
    rows = {r["content"]: r for r in system.mem.db.load_all()}
    assert rows["billing fact 4"]["priority"] == "SHORT_TERM"
    assert rows["billing fact 0"]["expires_at"] is None  # permanent
    assert rows["billing fact 1"]["expires_at"] is not None  # 7d
    system.mem.close()
