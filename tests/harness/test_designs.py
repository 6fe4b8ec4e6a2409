"""Scenarios target a design (the specification they test), not a system's name (issue 31)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.errors import ScenarioError
from harness.replay import DESIGNS, system_design, system_plan, target_problem
from harness.scenario import load_all, load_scenario
from harness.system import ReferenceSystem, reference_factory
from harness.systems import SHIPPED_DESIGNS
from harness.systems.sqlite import SqliteSystem
from tests.harness.conftest import SCENARIOS

PORTABLE = SCENARIOS / "dream" / "portable-duplicate-records.yaml"


def _results(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_the_shipped_systems_declare_the_designs_the_plan_assumes() -> None:
    assert system_design(ReferenceSystem) == SHIPPED_DESIGNS["reference"]
    assert system_design(SqliteSystem) == SHIPPED_DESIGNS["sqlite"]
    assert set(SHIPPED_DESIGNS.values()) == set(DESIGNS)


def test_design_is_read_dumped_and_refused_when_blank(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(PORTABLE.read_text().replace("strategies:", "design: qwen-file\nstrategies:", 1))
    assert load_scenario(path).design == "qwen-file"
    path.write_text(PORTABLE.read_text().replace("strategies:", "design: '  '\nstrategies:", 1))
    with pytest.raises(ScenarioError, match=r"d\.yaml:\d+: design: "):
        load_scenario(path)


@dataclass
class _Named:
    name: str
    design: str = ""


def test_a_design_scenario_runs_on_any_system_of_that_design_and_says_why_not_elsewhere(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(PORTABLE.read_text().replace("strategies:", "design: qwen-file\nstrategies:", 1))
    scenario = load_scenario(path)
    assert target_problem(scenario, _Named("reference", "qwen-file")) is None
    assert target_problem(scenario, _Named("upstream-ts", "qwen-file")) is None  # another name, same design
    assert target_problem(scenario, _Named("reference")) == "tests the qwen-file design; reference declares no design"
    assert target_problem(scenario, _Named("sqlite", "s1-sqlite")) == \
        "tests the qwen-file design; sqlite declares design s1-sqlite"
    # the default plan gives it to the reference only; a misspelt design goes to the first system, never vanishes
    assert [(name, [s.id for s in part]) for name, _, part in system_plan(None, [scenario])] == [("reference", ["d"])]
    path.write_text(PORTABLE.read_text().replace("strategies:", "design: qwen-fiel\nstrategies:", 1))
    assert [name for name, _, _ in system_plan(None, [load_scenario(path)])] == ["reference"]
    assert main(["run", str(path), "--no-gates", "--out", str(tmp_path / "o")], environ={}) == 0
    assert [r.get("skipped") for r in _results(tmp_path / "o")] == [
        "tests the qwen-fiel design; reference declares design qwen-file"]
    summary = (tmp_path / "o" / "summary.md").read_text()  # the count and the reason, not only "0/1 passed"
    assert "0/1 scenario runs passed, 1 skipped" in summary
    assert "| tests the qwen-fiel design; reference declares design qwen-file | 1 | `d [heuristic]` |" in summary


def _renamed(workdir: Path, clock: Any, model: Any, events: Any) -> Any:
    system = reference_factory(workdir, clock, model, events)
    system.name = "qwen-port-b"  # an independent implementation of the same design
    return system


def test_an_implementation_of_the_qwen_design_under_another_name_runs_what_the_reference_runs(tmp_path: Path) -> None:
    suite = load_all([SCENARIOS])
    ours = [s for s in suite if s.design == "qwen-file" or (not s.design and not s.systems)]
    pinned = [s for s in suite if s.systems == ("reference",)]
    assert len(ours) > 120
    assert len(pinned) < len([s for s in suite if s.design == "qwen-file"]) / 5  # name pinning is the exception
    module = tmp_path / "renamed_qwen.py"
    module.write_text("from tests.harness.test_designs import _renamed as factory\n")
    import sys
    sys.path.insert(0, str(tmp_path))
    try:
        out = tmp_path / "o"
        code = main(["run", str(SCENARIOS), "--system", "renamed_qwen:factory", "--strategy", "heuristic",
                     "--no-gates", "--out", str(out)], environ={})
    finally:
        sys.path.remove(str(tmp_path))
    results = _results(out)
    ran = {r["scenario"] for r in results if r["status"] != "skipped"}
    skipped = {r["scenario"]: r["skipped"] for r in results if r["status"] == "skipped"}
    expected = {s.id for s in ours if not s.strategies or "heuristic" in s.strategies}
    assert ran == expected
    assert all(s.id in skipped and "written for system(s) reference" in skipped[s.id]
               for s in pinned if not s.strategies or "heuristic" in s.strategies)
    assert all("s1-sqlite design" in skipped[s.id] for s in suite if s.design == "s1-sqlite"
               and (not s.strategies or "heuristic" in s.strategies))
    failed = [r["scenario"] for r in results if r["status"] not in ("passed", "skipped")]
    assert failed == []
    assert code == 0


def test_summary_md_counts_skipped_steps_with_the_capability_they_need(tmp_path: Path) -> None:
    # the worked example declares only `dream`: the scenario's index check is skipped, and summary.md says which
    # capability it needs, with an example (issue 31: skipped counts and reasons everywhere); a run whose every step
    # was skipped is a skipped run, never a pass by absence
    path = tmp_path / "many-files-200.yaml"
    text = (SCENARIOS / "index" / "many-files-200.yaml").read_text()
    path.write_text("\n".join(line for line in text.splitlines() if not line.startswith("design:")) + "\n")
    assert main(["run", str(path), "--system", "tests.example_system:factory", "--no-gates",
                 "--out", str(tmp_path / "o")], environ={}) == 0
    summary = (tmp_path / "o" / "summary.md").read_text()
    assert "0/1 scenario runs passed, 1 skipped" in summary
    assert "| every step was skipped: index checks needs capability file_index | 1 | `many-files-200 [heuristic]` |" \
        in summary
    probes = [json.loads(line) for line in (tmp_path / "o" / "probes.jsonl").read_text().splitlines()]
    assert [p["skipped"] for p in probes if p.get("skipped")] == ["index checks needs capability file_index"]


SEED_NONE = SCENARIOS / "sqlite" / "none-substring.yaml"


def test_a_variant_is_checked_where_it_is_written(tmp_path: Path) -> None:
    path = tmp_path / "v.yaml"
    for text, message in (
            ("design: s1-sqlite\nvariant: seed+q0_nothing\n", r"v\.yaml:\d+: variant: unknown quirk 'q0_nothing'"),
            ("design: s1-sqlite\nvariant: sead\n", r"v\.yaml:\d+: variant: quirk mode must start with 'seed' or 'fixed'"),
            ("design: qwen-file\nvariant: seed\n", r"v\.yaml:\d+: variant: only a scenario of design s1-sqlite"),
            ("variant: seed\n", r"v\.yaml:\d+: variant: .*this one's design: none, portable")):
        path.write_text(PORTABLE.read_text().replace("strategies:", text + "strategies:", 1))
        with pytest.raises(ScenarioError, match=message):
            load_scenario(path)
    mix = "fixed-q9_none_substring+q9_none_substring"
    path.write_text(SEED_NONE.read_text().replace("design: s1-sqlite\n", f"design: s1-sqlite\nvariant: {mix}\n"))
    assert load_scenario(path).variant == mix


@pytest.mark.parametrize(("variant", "present", "passes"), [
    ("seed", True, False), ("seed", False, True),  # the seed drops a reply that mentions NoneType (spec §7 Q9)
    ("fixed+q9_none_substring", False, True), ("fixed", True, True), ("fixed", False, False)])
def test_the_sqlite_system_is_built_in_the_scenarios_variant(tmp_path: Path, variant: str, present: bool,
                                                             passes: bool) -> None:
    path = tmp_path / "v.yaml"
    text = SEED_NONE.read_text().replace("design: s1-sqlite\n", f"design: s1-sqlite\nvariant: {variant}\n")
    path.write_text(text if present else text.replace("facts_present", "facts_absent"))
    out = tmp_path / "out"
    for system in ("sqlite", "sqlite:seed"):  # the scenario's variant wins over the run's
        assert main(["run", str(path), "--system", system, "--out", str(out)]) == (0 if passes else 1)
        [result] = _results(out)
        assert result["passed"] is passes
        assert not result.get("skipped")


def test_a_system_without_variants_skips_a_variant_scenario_and_says_why(tmp_path: Path) -> None:
    scenario = load_scenario(SEED_NONE)
    path = tmp_path / "v.yaml"
    path.write_text(SEED_NONE.read_text().replace("design: s1-sqlite\n", "design: s1-sqlite\nvariant: seed\n"))
    varied = load_scenario(path)
    assert target_problem(scenario, _Named("mine", "s1-sqlite")) is None
    assert target_problem(varied, _Named("mine", "s1-sqlite")) == \
        "tests the s1-sqlite variant seed; mine offers no variants (a factory offers them with for_variant(text))"


def test_system_all_plans_every_shipped_system_each_with_its_own_scenarios() -> None:
    """``--system all`` (issue 35's side by side): the opt-in systems too; a scenario written for one of them goes to
    it alone (before, a mem0-only scenario was also handed to the reference, which reported it skipped)."""
    from harness.systems import OPT_IN, SYSTEMS

    suite = load_all([SCENARIOS])
    plain, every = system_plan(None, suite), system_plan(None, suite, every=True)
    assert [name for name, _, _ in every] == list(SYSTEMS)
    assert [name for name, _, _ in plain] == [n for n in SYSTEMS if n not in OPT_IN]
    for name, _, part in every:
        pinned_elsewhere = [s.id for s in part if s.systems and name not in s.systems]
        assert pinned_elsewhere == [], (name, pinned_elsewhere)
    mem0 = dict((name, part) for name, _, part in every)["mem0"]
    assert "mem0/extract-then-recall" in {s.id for s in mem0}
    assert {s.id for s in mem0} - {"mem0/extract-then-recall"} == {
        s.id for s in suite if not s.design and not s.systems}  # the portable ones


_TOUCHED_PLACES = {  # a step that carries a touched list, with {names} where the list goes
    "extract": '  - session: s1\n    turns: [{user: "I like tabs over spaces a lot"}]\n    expect_extract: {touched: {names}}\n',
    "trailing": '  - session: s1\n    turns: [{user: "I like tabs over spaces a lot"}]\n    queued_behind: busy\n'
                '    expect_extract: {status: skipped}\n    expect_trailing: {runs: 1, touched: {names}}\n',
    "dream": "  - dream: {force: true, expect_touched: {names}}\n",
    "forget": "  - forget: {query: tabs, expect_touched: {names}}\n",
}


@pytest.mark.parametrize("place", sorted(_TOUCHED_PLACES))
@pytest.mark.parametrize("design", ["", "qwen-file", "s1-sqlite", "s1-sqlit"])  # the last: a misspelled design
def test_touched_names_the_designs_memory_kinds_and_refuses_the_others(tmp_path: Path, place: str,
                                                                       design: str) -> None:
    """``touched`` names the memory kinds of the scenario's design: the file design's four topics (also a portable
    scenario's), the SQLite design's seven v2 types (SQLite spec §1, what its extraction reports); each name of the
    other design is a located error at its line and index, everywhere a touched list goes."""
    from harness.scenario._load_more import SQLITE_TYPES, TOPICS

    mine, theirs = (SQLITE_TYPES, TOPICS) if design == "s1-sqlite" else (TOPICS, SQLITE_TYPES)
    head = f"design: {design}\n" if design else ""
    path = tmp_path / "t.yaml"
    step = _TOUCHED_PLACES[place]
    path.write_text(f"{head}steps:\n" + step.replace("{names}", "[" + ", ".join(mine) + "]"))
    loaded = load_scenario(path)
    assert loaded.design == design
    for name in theirs:
        path.write_text(f"{head}steps:\n" + step.replace("{names}", f"[{mine[0]}, {name}]"))
        whose = "s1-sqlite design's kinds" if name in SQLITE_TYPES else "file topics"
        with pytest.raises(ScenarioError, match=rf"t\.yaml:\d+: steps\[0\]\.\w+\.(expect_)?touched\[1\]: expected "
                                                rf"one of {', '.join(mine)}, got '{name}' \('{name}' is one of the "
                                                rf"{whose}; this scenario's design is {design or 'none'}\)$"):
            load_scenario(path)
    path.write_text(f"{head}steps:\n" + step.replace("{names}", f"[{mine[0]}, not-a-kind]"))
    with pytest.raises(ScenarioError, match=rf"touched\[1\]: expected one of {', '.join(mine)}, got 'not-a-kind'$"):
        load_scenario(path)  # a name of no design: no hint
