"""The SQLite adapter through the public protocol: name, capabilities, limits, seed fields, checks, variants."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import HarnessError, ScenarioInputError
from harness.replay import Capability, load_factory
from harness.scenario import SeedMemory
from harness.systems.sqlite import INJECTED_MAX_CHARS, MEMORY_MD_ITEM_CHARS, RECALL_LIMIT, SqliteSystem
from memory_core.clock import FixedClock

REPO = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 3, 2, 9, tzinfo=UTC)


def _system(tmp_path: Path, variant: str = "fixed") -> SqliteSystem:
    system = load_factory(f"sqlite:{variant}")(tmp_path, FixedClock(NOW), None, None)
    assert isinstance(system, SqliteSystem)
    return system


def test_declares_its_name_capabilities_and_the_spec_limits(tmp_path: Path) -> None:
    system = _system(tmp_path)
    assert system.name == "sqlite"
    assert system.capabilities == {Capability.DREAM, Capability.RECALL_PROMPT, Capability.SYSTEM_CHECKS, Capability.EVENTS,
                                   Capability.RECALL_OPTIONS, Capability.FORGET_OPTIONS}
    assert (RECALL_LIMIT, MEMORY_MD_ITEM_CHARS, INJECTED_MAX_CHARS) == (20, 1500, 900)  # spec §4.2, §5.5, §4.7
    system.close()


def test_the_adapter_imports_nothing_from_the_file_core() -> None:
    source = (REPO / "harness" / "systems" / "sqlite.py").read_text(encoding="utf-8")
    imports = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    assert not [line for line in imports if "memory_core" in line and "memory_core.sqlite" not in line]
    assert len(source.splitlines()) <= 200


@pytest.mark.parametrize("spec", ["sqlite:bogus", "sqlite:fixed+q99_nothing"])
def test_a_bad_variant_is_one_line(spec: str) -> None:
    with pytest.raises(HarnessError) as err:
        load_factory(spec)
    assert "\n" not in str(err.value)
    assert spec in str(err.value)


def test_a_bad_variant_on_the_cli_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", str(REPO / "scenarios" / "sqlite" / "ttl-2h.yaml"), "--system", "sqlite:nope", "--out",
                 str(tmp_path / "o")], environ={})
    err = capsys.readouterr().err
    assert code != 0
    assert "Traceback" not in err
    assert "sqlite:nope" in err


def test_unknown_seed_field_and_unknown_check_say_what_is_known(tmp_path: Path) -> None:
    system = _system(tmp_path)
    with pytest.raises(ValueError, match=r"unknown system field.*importance"):
        system.seed(SeedMemory("user/a.md", body="x y z", system={"importanse": 0.5}), mtime=NOW)
    with pytest.raises(ScenarioInputError, match=r"check system\.nope: unknown check \(known: .*fts_integrity"):
        system.system_check("nope", True)  # the scenario's error (validate finds it), not a failed check
    system.close()


def test_seed_fields_reach_the_system(tmp_path: Path) -> None:
    system = _system(tmp_path)
    system.seed(SeedMemory("user/a.md", body="Answers in short bullet points",
                           system={"importance": 0.8, "subject": "user", "predicate": "answer style"}), mtime=NOW)
    system.seed(SeedMemory("project/b.md", body="Gone soon", system={"expires_in": "-1h"}), mtime=NOW)
    system.seed(SeedMemory("project/c.md", body="Manual note about the staging port 8443",
                           system={"via": "add_memory", "importance": 0.5}), mtime=NOW)
    rows = {d.text: d for d in system.mem.documents()}
    assert rows["Answers in short bullet points"].source["importance_score"] == 0.8
    assert rows["Gone soon"].source["expires_at"] < "2026-03-02T09"
    assert rows["Manual note about the staging port 8443"].source["expires_at"].startswith("2026-03-05T09")  # 3 d
    assert system.system_check("memories", 3) is None
    assert system.system_check("memories", 2) == "memory rows: 3, expected 2"
    assert system.system_check("fts_integrity", True) is None
    assert system.system_check("fts_integrity", False) is not None
    assert system.system_check("index_contains", "bullet") is not None  # no dream yet: no MEMORY.md
    system.dream("d", now=NOW, strategy="heuristic")
    assert system.system_check("profile_contains", "short bullet points") is None
    assert system.system_check("index_within_limits", True) is None
    assert system.system_check("index_within_limits", False) is not None
    system.close()


def test_recall_reports_only_records_and_respects_limit_and_excluded(tmp_path: Path) -> None:
    system = _system(tmp_path)
    for i in range(4):
        system.seed(SeedMemory(f"user/m{i}.md", body=f"Gruvbox theme variant number {i} alpha{i}",
                               system={"importance": 0.9}), mtime=NOW)
    system.add_turns("s1", [], now=NOW)
    out = system.recall("gruvbox theme", now=NOW, limit=2, excluded=["user/m0.md"], strategy="heuristic")
    assert len(out.selected) == 2
    assert "user/m0.md" not in out.selected
    ids = {d.id for d in system.documents()}
    assert set(out.selected) <= ids
    assert len(out.scores) == len(out.selected)
    assert out.prompt
    system.close()
