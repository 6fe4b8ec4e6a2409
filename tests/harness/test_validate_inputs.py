"""``validate`` and ``run`` agree on what a shipped system refuses of a scenario's input (issue 33, F6's rest).

A memory's ``system:`` fields and a recall step's ``options`` are read by the system, not the loader: ``validate``
passed a field the SQLite system refuses, and ``run`` then stopped with the scenario's error (exit 2), unlocated.
Generated, for each shipped design: the seed fields of two memories (known names and others, values of every
kind) and a recall step's options. Whatever is generated, ``validate`` reports a problem exactly when ``run`` ends
the scenario with the scenario's error, both name the same problem, ``validate`` with ``file:line: field`` and
``run`` with the entry and its line; a field the system does not know is never passed in silence; and no
generated input makes the system under test *fail* (a field it cannot use is the scenario's fault).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.replay import input_problems, load_factory, replay
from harness.scenario import load_scenario
from harness.systems import SEED_FIELDS
from tests.harness.conftest import OTel
from tests.helpers import examples

_KEYS = {"s1-sqlite": st.sampled_from([*sorted(SEED_FIELDS["sqlite"]), "bogus", "Importance", "ttl", "special"]),
         "qwen-file": st.sampled_from(["special", "special", "to", "bogus", "importance"]),  # its special files
         "": st.sampled_from([*sorted(SEED_FIELDS["sqlite"]), "special", "to", "bogus"])}  # portable: both run it
_SYSTEMS = {"s1-sqlite": ["sqlite"], "qwen-file": ["reference"], "": ["reference", "sqlite"]}
_VALUES = st.one_of(
    st.sampled_from(["-1h", "3d", "30m", "7d", "24h", "permanent", "session", "x", "", "add_memory", "pending",
                     "processing", "SHORT_TERM", "long_term", "fact", "user", "fifo", "symlink", "latin1_name",
                     "user/c.md", "../outside.md", "user/a.md"]),
    st.integers(-3, 3), st.floats(0, 1), st.booleans())
_OPTIONS = st.dictionaries(st.sampled_from(["path", "memory_type", "limit"]),
                           st.one_of(st.sampled_from(["candidates", "typed", "cascade", "nope", "fact"]),
                                     st.integers(0, 3)), max_size=2)


def _scenario(tmp: Path, first: dict[str, Any], second: dict[str, Any], options: dict[str, Any],
              design: str = "s1-sqlite") -> Path:
    file = tmp / "s.yaml"
    file.write_text(
        f"description: seed fields and options\n{f'design: {design}' if design else ''}\nclock: 2026-03-02T09:00:00Z\n"
        "memories:\n"
        f'  - {{path: user/a.md, type: user, body: "tea notes", system: {json.dumps(first)}}}\n'
        f'  - {{path: user/b.md, type: user, body: "coffee notes", system: {json.dumps(second)}}}\n'
        f"steps:\n  - recall: {{query: tea, measure: true, options: {json.dumps(options)}}}\n", encoding="utf-8")
    return file


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), design=st.sampled_from(sorted(_KEYS)), options=_OPTIONS)
def test_validate_refuses_exactly_what_run_refuses(tmp_path: Path, data: st.DataObject, design: str,
                                                   options: dict[str, Any]) -> None:
    first, second = (data.draw(st.dictionaries(_KEYS[design], _VALUES, max_size=3)) for _ in range(2))
    file = _scenario(tmp_path, first, second, options, design)
    scenario = load_scenario(file)
    problems = input_problems(scenario)
    results = []
    for system in _SYSTEMS[design]:
        otel = OTel()
        try:
            results.append(replay(scenario, strategy="heuristic", telemetry=otel.telemetry,
                                  system_factory=load_factory(system)))
        finally:
            otel.shutdown()
        assert not [f for f in results[-1].failures if "system under test failed" in f], results[-1].failures
    if any(set(fields) - set().union(*SEED_FIELDS.values()) for fields in (first, second)):
        assert problems, f"a field no shipped system reads passed: {first} {second}"  # never silently ignored
    errors = [r.error for r in results if r.error is not None]
    if not problems:
        assert errors == [], errors
        return
    assert errors, f"validate said {problems[0]!r}, the run passed"
    error = next(e for e in errors if problems[0].partition(": ")[2].partition(": ")[2] in e)
    where, _, said = problems[0].partition(": ")[2].partition(": ")  # file:line: FIELD: message
    assert problems[0].startswith(f"{file}:"), problems[0]
    assert said in error, (problems[0], error)
    if where.startswith("memories["):
        index = int(where[len("memories["):where.index("]")])
        assert where == f"memories[{index}].system"
        assert problems[0].startswith(f"{file}:{5 + index}: ")
        assert f"memories[{index}] (line {5 + index}): " in error  # the run locates it too
    else:
        assert where == "steps[0].recall.options"
        assert problems[0].startswith(f"{file}:8: ")
        assert "step 0 (recall, line 8)" in error


def test_memharness_validate_prints_each_refused_input_and_exits_2(tmp_path: Path) -> None:
    file = _scenario(tmp_path, {"bogus": 1}, {"via": "somewhere"}, {"path": "nope"})
    done = subprocess.run([sys.executable, "-m", "harness", "validate", str(file)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert [ln.split(": ", 3)[:2] for ln in lines] == [
        ["memharness", f"{file}:5"], ["memharness", f"{file}:6"], ["memharness", f"{file}:8"]], lines
    assert "memories[0].system: memory user/a.md: unknown system field(s) bogus" in lines[0]
    assert "memories[1].system: memory user/b.md: system.via must be add_memory, got 'somewhere'" in lines[1]
    assert "steps[0].recall.options: recall option path: expected one of" in lines[2]


_CHECK_KEYS = {"s1-sqlite": st.sampled_from(["sql", "traces", "traces_newest", "memories", "episodes", "fts_integrity",
                                             "index_contains", "no_episode_hits", "meta_contains", "bogus"]),
               "qwen-file": st.sampled_from(["meta_contains", "meta_lacks", "cursor_contains", "cursor_lacks",
                                             "meta_has", "sql", "bogus"])}
_CHECK_VALUES = st.one_of(
    st.sampled_from(["tea", "", "tea => 1", "tea => x", " => 1", "SELECT 1 => 1", "SELECT count(*) FROM memories => 2",
                     "SELECT 1", "no arrow", "=>"]),
    st.integers(-2, 3), st.floats(-1, 2), st.booleans())
_FORGET_OPTIONS = st.dictionaries(st.sampled_from(["max_delete", "memory_type", "bogus"]),
                                  st.one_of(st.integers(-2, 3), st.sampled_from(["user", "fact", "x"]), st.booleans(),
                                            st.floats(0, 2)), max_size=2)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), design=st.sampled_from(sorted(_CHECK_KEYS)), options=_FORGET_OPTIONS)
def test_validate_refuses_exactly_the_checks_and_forget_options_run_refuses(
        tmp_path: Path, data: st.DataObject, design: str, options: dict[str, Any]) -> None:
    """The same agreement for a check step's ``system:`` checks (name and value, each system's own) and a forget
    step's ``options`` (the round-10 probe: validate passed ``sql: true``, ``bogus: 1`` and ``max_delete: -1``)."""
    checks = data.draw(st.dictionaries(_CHECK_KEYS[design], _CHECK_VALUES, min_size=1, max_size=2))
    file = tmp_path / "s.yaml"
    file.write_text(
        f"description: checks and forget options\ndesign: {design}\nclock: 2026-03-02T09:00:00Z\nmemories:\n"
        '  - {path: user/a.md, type: user, body: "tea notes"}\n'
        f"steps:\n  - check: {{system: {json.dumps(checks)}}}\n"
        f"  - forget: {{query: tea notes, options: {json.dumps(options)}}}\n", encoding="utf-8")
    scenario = load_scenario(file)
    problems = input_problems(scenario)
    otel = OTel()
    try:
        result = replay(scenario, strategy="heuristic", telemetry=otel.telemetry,
                        system_factory=load_factory(_SYSTEMS[design][0]))
    finally:
        otel.shutdown()
    assert not [f for f in result.failures if "system under test failed" in f], result.failures
    if not problems:
        assert result.error is None, result.error
        assert not [f for f in result.failures if "unknown check" in f], result.failures  # never a silent pass
        return
    assert result.error is not None, f"validate said {problems[0]!r}, the run passed"
    where, _, said = problems[0].partition(": ")[2].partition(": ")
    assert said in result.error, (problems[0], result.error)
    line, field = (7, "check.system") if where == "steps[0].check.system" else (8, "forget.options")
    assert where == f"steps[{line - 7}].{field}", problems[0]
    assert problems[0].startswith(f"{file}:{line}: ")
    assert f"step {line - 7} ({field.partition('.')[0]}, line {line})" in result.error
