"""Round 16a: a seeded SQLite memory's ``system.expires_in`` so far off that its expiry is no timestamp (past the
year 9999 or before the year 1) is the scenario's error, named at its file, line and field; it was the system
under test's failure ("seed() raised OverflowError"), unlocated. Durations in range still replay. Generated."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import examples
from tests.hostile_cli._support import SEEDED_SQLITE, cli

CLOCK = datetime(2026, 3, 2, 9, tzinfo=UTC)
UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def _in_range(amount: int, unit: str) -> bool:
    try:
        CLOCK + timedelta(**{UNITS[unit]: amount})
    except OverflowError:
        return False
    return True


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(amount=st.one_of(st.integers(-(10**14), 10**14), st.integers(2_900_000, 3_000_000).map(lambda d: d * 86_400)),
       unit=st.sampled_from(sorted(UNITS)))
def test_an_expiry_no_timestamp_holds_is_the_scenarios_located_error(amount: int, unit: str, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    case = tmp_path / f"c{abs(amount)}{unit}{amount < 0}"
    (case / "s").mkdir(parents=True)
    value = f"{amount}{unit}"
    text = SEEDED_SQLITE.format(description="an expiry far off", system=f"expires_in: {value}")
    (case / "s" / "far.yaml").write_text(text, encoding="utf-8")
    o = cli(["run", str(case / "s"), "--system", "sqlite", "--out", str(case / "o"), "--no-gates"], capsys)
    text = o.out + o.err
    assert "Traceback" not in text
    assert "OverflowError" not in text
    assert "system under test failed" not in text
    if _in_range(amount, unit):
        assert o.code == 0, text
    else:
        assert o.code != 0, text
        (line,) = [x for x in text.splitlines() if "expires_in" in x]
        assert "(line 9)" in line
        assert f"'{value}'" in line
        assert "outside the years 1 to 9999" in line
