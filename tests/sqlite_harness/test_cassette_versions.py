"""The shipped cassette's sqlite entries are current (not "template removed"), and a changed sqlite template is stale."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.replay import Cassette, resolve_set

REPO = Path(__file__).resolve().parents[2]
SETS = sorted(p.parent.name for p in (REPO / "scenarios" / "cassettes").glob("*/cassette.jsonl"))


@pytest.mark.parametrize("name", SETS)
def test_shipped_sqlite_entries_are_current(name: str) -> None:
    cassette = Cassette.open(REPO / "scenarios" / "cassettes" / name)
    sqlite = [e for e in cassette.entries.values() if str(e.get("prompt_version", "")).startswith("sqlite/")]
    assert sqlite  # the portable recall scenarios' decompositions were recorded
    stale = [changes for entry, changes in cassette.stale() if entry in sqlite]
    assert stale == []


def test_a_changed_sqlite_template_is_stale(tmp_path: Path) -> None:
    source = resolve_set(REPO / "scenarios" / "cassettes") / "cassette.jsonl"
    entry = next(json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()
                 if '"sqlite/' in line)
    name = entry["prompt_version"].split("+")[0].split("@")[0]
    entry["prompt_version"] = f"{name}@000000000000"
    (tmp_path / "cassette.jsonl").write_text(json.dumps(entry) + "\n", encoding="utf-8")
    [(_entry, changes)] = list(Cassette.open(tmp_path).stale())
    assert changes[0].startswith(f"{name}@000000000000 -> {name}@")
    assert "template removed" not in changes[0]
