"""What an operation reports beyond its status (``details``, ``warnings``), the ``state`` step and the systems'
state and SQL checks: each passes when true, fails when false, and is skipped (never passed) without its capability."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from harness.cli import main
from harness.replay import Capability
from harness.systems.faulty_store import FaultyStore
from memory_core.files.snapshot import RecallCache, cached_scan, plain_root
from memory_core.files.store import FileStore
from tests.example_system import ExampleSystem

EXTRACT = """\
description: extract reports its system message and its warnings
systems: [SYSTEMS]
strategies: [heuristic]
clock: 2026-03-02T09:00:00Z
steps:
  - session: s1
    turns: [{user: "remember that the staging service database is pg-stage-2"}, {assistant: ok}]
    expect_extract: EXPECT
"""


def _run(tmp_path: Path, text: str, *extra: str) -> tuple[int, list[dict]]:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    out = tmp_path / "out"
    code = main(["run", str(path), "--no-gates", "--out", str(out), *extra], environ={})
    probes = [json.loads(line) for line in (out / "probes.jsonl").read_text().splitlines() if line.strip()]
    return code, probes


@pytest.mark.parametrize(("expect", "code"), [
    ('{details: {message: "Managed auto-memory updated: project.md"}, warnings: []}', 0),
    ('{details: {message: "Managed auto-memory updated: user.md"}}', 1),  # the wrong topic
    ('{details: {inserted: 1}}', 1),  # a name the reference does not report fails: never passes by absence
    ('{details: {message: ""}}', 1),
    ('{warnings: ["meta.json"]}', 1),  # no warning was given
])
def test_reference_extract_details_and_warnings(tmp_path: Path, expect: str, code: int) -> None:
    assert _run(tmp_path, EXTRACT.replace("SYSTEMS", "reference").replace("EXPECT", expect))[0] == code


def test_sqlite_extract_details(tmp_path: Path) -> None:
    good = EXTRACT.replace("SYSTEMS", "sqlite").replace("EXPECT", "{details: {inserted: 1, merged: 0, note: ''}}").replace(
        "remember that the staging service database is pg-stage-2", "I always use vim keybindings in every editor I touch")
    assert _run(tmp_path, good)[0] == 0
    assert _run(tmp_path, good.replace("inserted: 1", "inserted: 2"))[0] == 1
    assert _run(tmp_path, good.replace("inserted: 1", "inserted: true"))[0] == 1  # a bool is not the count 1


def test_warnings_are_skipped_without_the_capability(tmp_path: Path) -> None:
    text = EXTRACT.replace("systems: [SYSTEMS]\n", "").replace("EXPECT", "{warnings: []}")
    code, probes = _run(tmp_path, text, "--system", "tests.example_system:factory")
    assert code == 0
    [probe] = [p for p in probes if p["kind"] == "extract"]
    assert "warnings needs capability warnings" in probe["skipped"]


STATE = """\
description: a planted meta.json is read, kept or rebuilt
systems: [reference]
strategies: [heuristic]
clock: 2026-03-02T09:00:00Z
steps:
  - state: {file: meta, text: 'TEXT'}
  - dream: {force: true, expect_warnings: WARN}
  - check: {system: {CHECK}}
"""


@pytest.mark.parametrize(("text", "warn", "check", "code"), [
    ('{"version": 1, "note": "kept"}', "[]", 'meta_contains: "\\"note\\": \\"kept\\""', 0),
    ('{"version": 1, "note": "kept"}', "[]", 'meta_lacks: "\\"note\\""', 1),
    ("{not json", '["meta.json: line 1: invalid JSON"]', 'meta_lacks: "{not json"', 0),
    ("{not json", "[]", 'meta_contains: "\\"version\\": 1"', 1),  # the warning is there, so [] fails
    ('{"version": 1}', "[]", 'cursor_contains: "processedOffset"', 1),  # no extract ran: no offset yet
    ('{"version": 1}', "[]", "no_such_check: x", 2),  # an unknown check name: the scenario's error, naming the known ones
])
def test_state_step_and_state_checks(tmp_path: Path, text: str, warn: str, check: str, code: int) -> None:
    scenario = STATE.replace("TEXT", text).replace("WARN", warn).replace("CHECK", check)
    assert _run(tmp_path, scenario)[0] == code


def test_state_step_is_skipped_without_the_capability(tmp_path: Path) -> None:
    scenario = STATE.replace("systems: [reference]\n", "").replace("TEXT", "{}").replace(
        "  - dream: {force: true, expect_warnings: WARN}\n", "").replace("CHECK", "x: 1")
    code, probes = _run(tmp_path, scenario, "--system", "tests.example_system:factory")
    assert code == 0
    assert any("needs capability state_files" in (p.get("skipped") or "") for p in probes)


SQL = """\
description: the SQLite system's read-only sql check
systems: [sqlite]
strategies: [heuristic]
clock: 2026-03-02T09:00:00Z
memories:
  - {path: user/a.md, name: a, type: user, body: "The user likes green tea", system: {importance: 0.9}}
  - {path: user/b.md, name: b, type: user, body: "The user likes black coffee", system: {importance: 0.4}}
steps:
  - check: {system: {sql: "QUERY"}}
"""


@pytest.mark.parametrize(("query", "code"), [
    ("SELECT content, importance_score FROM memories ORDER BY importance_score DESC => "
     "The user likes green tea | 0.9; The user likes black coffee | 0.4", 0),
    ("SELECT count(*) FROM memories => 3", 1),
    ("SELECT count(*) FROM memories WHERE 0 => 0", 0),
    ("SELECT id FROM memories WHERE 0 => ", 0),  # no rows: empty
    ("DELETE FROM memories => ", 1),  # read-only: a write is refused and fails the check
    ("SELEC nonsense => 1", 1),
    ("no arrow", 2),  # the scenario's error: validate refuses it too
])
def test_sql_check(tmp_path: Path, query: str, code: int) -> None:
    assert _run(tmp_path, SQL.replace("QUERY", query))[0] == code


def test_the_sql_check_creates_no_file(tmp_path: Path) -> None:
    for query in (f"ATTACH DATABASE '{tmp_path}/x.db' AS n", f"VACUUM INTO '{tmp_path}/v.db'"):
        code, _ = _run(tmp_path, SQL.replace("QUERY", f"{query} => "))
        assert code == 1
    assert not (tmp_path / "x.db").exists()
    assert not (tmp_path / "v.db").exists()


@pytest.mark.parametrize("query", [
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c => 1",  # never ends
    "SELECT length(zeroblob(1000000000)) => 1000000000",  # a value of 1 GB
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 200000) SELECT x FROM c => 1",  # 200,000 rows
])
def test_an_sql_check_that_would_run_away_fails_in_bounded_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 query: str) -> None:
    """Hostile probe, round 8: a recursive CTE in a scenario's sql check hung the run for good (SQLite's loop is
    not cut by the per-operation timeout's signal, and the shipped systems replay in-process)."""
    from harness.systems import sqlite_checks

    monkeypatch.setattr(sqlite_checks, "SQL_CHECK_SECONDS", 1.0)
    start = time.monotonic()
    code, probes = _run(tmp_path, SQL.replace("QUERY", query))
    assert code == 1
    assert time.monotonic() - start < 30
    assert any("sql" in (p.get("error") or "") or not p["passed"] for p in probes if p["kind"] == "check")


def test_the_sql_check_never_writes(tmp_path: Path) -> None:
    scenario = SQL.replace("QUERY", "DELETE FROM memories => ") + "  - check: {system: {memories: 2}}\n"
    code, probes = _run(tmp_path, scenario)
    checks = {p["step"]: p["passed"] for p in probes if p["kind"] == "check" and p.get("step") is not None}
    assert code == 1
    assert (checks[0], checks[1]) == (False, True)


def test_a_fifo_topic_file_neither_blocks_nor_fails(tmp_path: Path) -> None:
    scenario = """\
description: a FIFO among the topic files
systems: [reference]
strategies: [heuristic]
clock: 2026-03-02T09:00:00Z
memories:
  - {path: user/editor.md, type: user, name: editor, description: "The user edits code in Helix", body: "Helix."}
  - {path: user/pipe.md, type: user, name: pipe, system: {special: fifo}}
steps:
  - recall: {query: "which editor for code", expect_selected: [user/editor.md]}
  - dream: {force: true, expect_warnings: ["user/pipe.md"]}
"""
    assert _run(tmp_path, scenario)[0] == 0


def test_the_recall_fast_path_follows_the_protocol_not_the_type(tmp_path: Path) -> None:
    """A wrapper store gets the scan cache's direct reads while no fault is armed, and loses them while one is."""
    store = FileStore(tmp_path / "memory")
    store.write("user/a.md", "---\nname: a\ndescription: tea\ntype: user\n---\nGreen tea.\n")
    wrapped = FaultyStore(store)
    assert plain_root(store) == os.fspath(store.root) == plain_root(wrapped)
    cache = RecallCache()
    assert [d.relative_path for d in cached_scan(wrapped, cache).docs] == ["user/a.md"]
    assert cache.source == os.fspath(store.root)  # the direct walk, not the protocol
    wrapped.inject("vanish", "user/*", 1)
    assert plain_root(wrapped) is None
    assert cached_scan(wrapped, RecallCache()).docs == ()  # the fault fires: the file is gone when read
    assert plain_root(type("Sub", (FileStore,), {})(tmp_path / "memory")) is None  # a subclass may change reads


class _LocksWithoutProbe(ExampleSystem):
    """Declares ``locks`` and can plant one, but offers no ``lock_held()``."""

    def plant_lock(self, pid: str, *, mtime: object) -> None:
        return None


def locks_without_probe(workdir: Path, clock: object, model: object, events: object) -> _LocksWithoutProbe:
    return _LocksWithoutProbe(capabilities=frozenset({Capability.DREAM, Capability.LOCKS}))


def test_no_check_passes_by_absence(tmp_path: Path) -> None:
    """A wrong expect_event on a system without events is skipped, naming the capability; a lock_held check on a
    system that declares locks but cannot be asked fails, naming the method."""
    wrong_event = """\
description: a deliberately wrong event expectation
strategies: [heuristic]
clock: 2026-03-02T09:00:00Z
steps:
  - session: s1
    turns: [{user: "I always use vim keybindings in every editor"}]
    expect_extract: {event: {name: no-such-event}}
  - recall: {query: vim, expect_event: {name: no-such-event}}
"""
    code, probes = _run(tmp_path, wrong_event, "--system", "tests.example_system:factory")
    assert code == 0
    skipped = [p.get("skipped") or "" for p in probes if p["kind"] in ("extract", "recall")]
    assert skipped
    assert all("expect_event needs capability events" in s for s in skipped)
    lock = """\
description: a lock check the system cannot answer
strategies: [heuristic]
clock: 2026-03-02T09:00:00Z
steps:
  - lock: {pid: live}
  - check: {lock_held: true}
"""
    code, _ = _run(tmp_path, lock, "--system", "tests.harness.test_reported:locks_without_probe")
    assert code == 1


TOOLS = """\
description: tool calls and results in a turn reach the SQLite extraction prompt; the reference records them
systems: [SYSTEM]
strategies: [model]
scripted_model:
  - {items: []}
  - {summary: "s", goal: "g", outcome: success, entities: [], tools_used: []}
  - {patches: []}
clock: 2026-03-02T09:00:00Z
steps:
  - session: s1
    turns:
      - user: "Please look up which port the service listens on today"
        tool_calls: [{name: read_file, arguments: {path: app.yaml, mode: r}}, {name: grep}]
        tool_results: [{content: "port 8080"}, {content: "no match", is_error: true}]
    expect_extract: {model_shown: SHOWN}
"""


@pytest.mark.parametrize(("shown", "code"), [
    ('[\'read_file({"path": "app.yaml"})\', "grep({})", "结果: port 8080", "错误: no match"]', 0),
    ('[\'"mode"\']', 1),  # a parameter outside the key params is not shown
])
def test_tool_turns_reach_the_sqlite_extraction_prompt(tmp_path: Path, shown: str, code: int) -> None:
    assert _run(tmp_path, TOOLS.replace("SYSTEM", "sqlite").replace("SHOWN", shown))[0] == code


def test_tool_turns_round_trip_and_are_validated(tmp_path: Path) -> None:
    from harness.errors import ScenarioError
    from harness.scenario import load_scenario, scenario_to_yaml

    path = tmp_path / "t.yaml"
    path.write_text(TOOLS.replace("SYSTEM", "sqlite").replace("SHOWN", "[x]"))
    scenario = load_scenario(path)
    [turn] = scenario.steps[0].turns  # type: ignore[union-attr]
    assert [c.as_dict() for c in turn.tool_calls] == [{"name": "read_file", "arguments": {"path": "app.yaml", "mode": "r"}},
                                                      {"name": "grep", "input": {}}]
    again = tmp_path / "again.yaml"
    again.write_text(scenario_to_yaml(scenario))
    assert load_scenario(again).steps == scenario.steps
    for bad, message in [("tool_calls: [{name: grep, input: {a: 1}, arguments: {a: 1}}]", "at most one of"),
                         ("tool_calls: [{input: {a: 1}}]", "expected a 'name'"),
                         ("tool_results: [{is_error: true}]", "expected 'content'")]:
        path.write_text(TOOLS.replace("SYSTEM", "sqlite").replace("SHOWN", "[x]").replace(
            "        tool_calls: [{name: read_file, arguments: {path: app.yaml, mode: r}}, {name: grep}]\n", "").replace(
            "        tool_results: [{content: \"port 8080\"}, {content: \"no match\", is_error: true}]\n",
            f"        {bad}\n"))
        with pytest.raises(ScenarioError, match=message):
            load_scenario(path)


OPTIONS = """\
description: recall switches
strategies: [heuristic]
clock: 2026-03-02T09:00:00Z
memories:
  - {path: user/tabs.md, name: tabs, type: user, body: "Uses tabs in Go code", description: "indentation"}
steps:
  - recall: {query: "Go", options: OPTIONS, expect_selected: [user/tabs.md]}
"""


def test_recall_options_reach_the_sqlite_system_and_are_skipped_elsewhere(tmp_path: Path) -> None:
    assert _run(tmp_path, OPTIONS.replace("OPTIONS", "{path: cascade}") + "systems: [sqlite]\n")[0] == 0
    code, _ = _run(tmp_path, OPTIONS.replace("OPTIONS", "{depth: 3}") + "systems: [sqlite]\n")
    assert code != 0  # an unknown switch is an error, never ignored
    code, probes = _run(tmp_path, OPTIONS.replace("OPTIONS", "{path: cascade}") + "systems: [reference]\n")
    assert code == 0
    assert any("options needs capability recall_options" in (p.get("skipped") or "") for p in probes)


PARAMS = """\
description: model request parameters
systems: [reference]
strategies: [STRATEGY]
scripted_model:
  - {selected_memories: [user/editor.md]}
clock: 2026-03-02T09:00:00Z
memories:
  - {path: user/editor.md, name: Editor, description: the editor, type: user, body: "Helix", age: 1d}
steps:
  - recall: {query: "which editor", expect_model_params: PARAMS}
"""


@pytest.mark.parametrize(("strategy", "params", "code"), [
    ("model", "{timeout_s: 5, temperature: 0, purpose: auto-memory-recall}", 0),
    ("model", "{timeout_s: 2}", 1),
    ("heuristic", "{timeout_s: 5}", 1),  # no model call: the expectation fails, it never passes by absence
])
def test_model_params_are_checked_on_every_request(tmp_path: Path, strategy: str, params: str, code: int) -> None:
    text = PARAMS.replace("STRATEGY", strategy).replace("PARAMS", params)
    if strategy == "heuristic":  # replies no strategy asks for are a load error (round 17)
        text = text.replace("scripted_model:\n  - {selected_memories: [user/editor.md]}\n", "")
    assert _run(tmp_path, text)[0] == code


def test_an_unknown_model_param_is_a_located_error(tmp_path: Path) -> None:
    from harness.errors import ScenarioError
    from harness.scenario import load_scenario

    path = tmp_path / "p.yaml"
    path.write_text(PARAMS.replace("STRATEGY", "model").replace("PARAMS", "{top_p: 1}"))
    with pytest.raises(ScenarioError, match=r"p.yaml:10: .*expect_model_params: unknown parameter 'top_p'"):
        load_scenario(path)


def test_steps_after_a_skipped_fault_are_skipped_with_the_reason(tmp_path: Path) -> None:
    """A system without io_faults cannot be made to fail a write: the steps that assume the failure are skipped,
    not run against a store that never failed (where they would fail, or pass, for the wrong reason)."""
    scenario = """\
description: a write fault, then what it should have caused
strategies: [heuristic]
clock: 2026-03-02T09:00:00Z
steps:
  - advance: 1h
  - fault: {io: write_error, match: "*", times: 5}
  - advance: 1h
  - session: s1
    turns: [{user: "I always use vim keybindings in every editor I touch"}]
    expect_extract: {status: failed}
  - check: {facts_absent: []}
"""
    code, probes = _run(tmp_path, scenario, "--system", "tests.example_system:factory")
    assert code == 0
    reasons = {p["step"]: p.get("skipped") or "" for p in probes if p.get("step") is not None}
    assert "needs capability io_faults" in reasons[1]
    assert reasons[3].startswith("after step 1 was skipped (fault io write_error needs capability io_faults)")
    assert reasons[4].startswith("after step 1 was skipped")


@pytest.mark.parametrize("check", ["fts_integrity: 'yes'", "fts_integrity: 1", "memories: 2.5", "memories: true",
                                   "episodes: -1", "queue_open: '0'", "index_contains: 5", "traces: true"])
def test_an_sqlite_check_with_a_value_of_the_wrong_type_is_the_scenarios_error(tmp_path: Path, check: str) -> None:
    """Hostile probe, round 8: `fts_integrity: 'yes'` passed (any non-empty text was true)."""
    code, _ = _run(tmp_path, SQL.replace('sql: "QUERY"', check))
    assert code == 2
    errors = [json.loads(line)["error"] for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert any(f"check system.{check.split(':')[0]}: expected" in (e or "") for e in errors), errors


@pytest.mark.parametrize("options", ["{path: nope}", "{path: 5}", "{path: typed, memory_type: 5}",
                                     "{memory_type: true}", "{colour: red}"])
def test_a_bad_sqlite_recall_option_is_the_scenarios_error_not_the_systems(tmp_path: Path, options: str) -> None:
    """Hostile probe, round 8: `options: {path: nope}` failed the run as 'the system under test failed: recall()
    raised ValueError' (exit 1), while forget's bad options were the scenario's error (exit 2)."""
    scenario = SQL.replace('check: {system: {sql: "QUERY"}}', f"recall: {{query: tea, options: {options}, measure: true}}")
    code, _ = _run(tmp_path, scenario)
    errors = [json.loads(line)["error"] for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert code == 2, errors
    assert any("recall option" in (e or "") and "system under test failed" not in (e or "") for e in errors), errors
