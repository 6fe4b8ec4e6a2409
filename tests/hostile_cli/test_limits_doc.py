"""docs/limits.md lists every limit constant of harness/scenario/_limits.py, with its value."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from harness.scenario import _limits as lim

DOC = Path(__file__).resolve().parents[2] / "docs" / "limits.md"


def test_every_limit_is_documented_with_its_value() -> None:
    text = DOC.read_text(encoding="utf-8")
    constants = {k: v for k, v in vars(lim).items() if k.isupper() and not k.startswith("_")}
    assert len(constants) >= 20
    for name, value in constants.items():
        if name == "TEMP_PREFIX":
            assert value in text
            continue
        assert f"`{name}`" in text or name in text, f"{name} is not in docs/limits.md"
        if isinstance(value, int) and not isinstance(value, bool) and value < 1 << 20:
            assert f"{value:,}" in text or str(value) in text, f"{name} = {value} is not in docs/limits.md"
        elif isinstance(value, timedelta):
            assert f"{value.days:,}" in text
        elif isinstance(value, datetime):
            assert value.strftime("%Y-%m-%d") in text
