"""What a plug-in system declares as ``name``, ``design`` and ``strategies``, and a run that tested nothing
(hostile probe, round 13; generated).

On the old code a ``name`` or ``design`` that was not text (``5``, ``b"x"``, a list) was read as no name, so the
scenarios written for the system were skipped without a word; ``strategies = {"heurstic"}`` (or any set of names the
harness does not have) skipped every scenario run, and the run said ``PASSED — 0/60 scenario runs passed, 60
skipped`` with exit 0. Now a declaration is text / registered names or the system's failure, one line naming the
attribute, and a system whose every scenario run was skipped fails the run with a built-in gate.
"""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.errors import SYSTEM_FAILED, SystemFailure, one_line
from harness.evaluation._run import nothing_ran
from harness.replay import ScenarioResult
from harness.scenario import STRATEGY_NAMES
from harness.system import declared_strategies, reference_factory, system_design, system_name
from tests.harness.conftest import SCENARIOS

LEAF = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.binary(max_size=4),
                 st.text(max_size=8), st.text(min_size=195, max_size=205), st.sampled_from(["a\nb", "x\x00", "\u2028"]),
                 st.lists(st.text(max_size=3), max_size=2))


@settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(value=LEAF, attr=st.sampled_from(["name", "design"]))
def test_a_name_or_design_is_one_line_of_text_or_the_systems_failure(value: Any, attr: str) -> None:
    system = types.SimpleNamespace(**{attr: value})
    read = system_name if attr == "name" else system_design
    wanted = value is None or (type(value) is str and len(value) <= 200 and one_line(value) == value)
    try:
        got = read(system)
    except SystemFailure as exc:
        assert not wanted, value
        assert str(exc).startswith(f"{SYSTEM_FAILED}: its {attr} is ") and "\n" not in str(exc)
    else:
        assert wanted, value  # old code: 5, b"x" and a list were read as "" (no name), "a\nb" kept as given
        assert got == (value or "")


def _near_miss(name: str, i: int) -> str:
    """A registered name with one character dropped, doubled or swapped: the typo a declaration carries."""
    i %= len(name)
    return [name[:i] + name[i + 1:], name[:i] + name[i] + name[i:], name[:i] + name[i + 1:i + 2] + name[i] + name[i + 2:]][
        i % 3]


NAMES = st.one_of(st.sampled_from(list(STRATEGY_NAMES)), st.text(min_size=1, max_size=10),
                  st.builds(_near_miss, st.sampled_from(list(STRATEGY_NAMES)), st.integers(0, 20)))


@settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(names=st.lists(NAMES, max_size=4), kind=st.sampled_from([frozenset, set, list, tuple]))
def test_declared_strategies_are_registered_names_or_the_systems_failure(names: list[str], kind: Any) -> None:
    try:
        got = declared_strategies(types.SimpleNamespace(strategies=kind(names)))
    except SystemFailure as exc:
        unknown = sorted(set(names) - set(STRATEGY_NAMES))
        assert unknown  # refused only for a name the harness does not have
        assert f"{one_line(unknown[0])[:40]!r} is none" in str(exc) and "\n" not in str(exc)
        assert all(n in str(exc) for n in STRATEGY_NAMES)  # the names it could have meant
    else:
        assert got == frozenset(names) and got <= set(STRATEGY_NAMES)


def _result(strategy: str, status: str, i: int) -> ScenarioResult:
    return ScenarioResult(scenario=f"s{i}", strategy=strategy, passed=status == "passed",
                          failures=("x",) if status == "failed" else (), probes=(), trace_id="0" * 32,
                          skipped=f"reason {i}" if status == "skipped" else None)


COLUMNS = st.sampled_from(["heuristic", "model", "heuristic@sqlite", "bm25@sqlite", "heuristic@mine"])


@settings(max_examples=400, deadline=None, derandomize=True)
@given(rows=st.lists(st.tuples(COLUMNS, st.sampled_from(["passed", "failed", "skipped"])), max_size=12))
def test_every_system_that_ran_nothing_fails_a_gate_and_only_those(rows: list[tuple[str, str]]) -> None:
    results = [_result(c, status, i) for i, (c, status) in enumerate(rows)]
    gates = nothing_ran(results)
    systems: dict[str, set[str]] = {}
    for c, status in rows:
        systems.setdefault(c.partition("@")[2] or "reference", set()).add(status)
    idle = sorted(name for name, statuses in systems.items() if statuses == {"skipped"})
    assert sorted(g.name.split(":")[0] for g in gates) == idle
    for g in gates:
        assert not g.passed and g.gate.metric == "scenarios.skipped" and "reason" in g.detail


class _Declaring:
    """The reference system with one attribute overridden."""

    def __init__(self, inner: Any, **declared: Any) -> None:
        self._inner, self._declared = inner, declared

    def __getattr__(self, name: str) -> Any:
        return self._declared[name] if name in self._declared else getattr(self._inner, name)


def typo_factory(workdir: Path, clock: Any, model: Any, events: Any) -> _Declaring:
    return _Declaring(reference_factory(workdir, clock, model, events), strategies=frozenset({"heurstic"}))


def elsewhere_factory(workdir: Path, clock: Any, model: Any, events: Any) -> _Declaring:
    return _Declaring(reference_factory(workdir, clock, model, events), name="mine", design="mine")


def _run(tmp_path: Path, factory: str, *paths: Path) -> tuple[int, Path]:
    out = tmp_path / "out"
    code = main(["run", *map(str, paths), "--system", f"{__name__}:{factory}", "--no-gates", "--out", str(out)],
                environ={})
    return code, out


def test_a_misspelt_strategy_fails_every_run_as_the_systems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(tmp_path, "typo_factory", SCENARIOS / "recall" / "multi-fact.yaml")
    err = capsys.readouterr().out
    assert code == 1, err  # old code: PASSED, exit 0, every run skipped
    (result,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert not result["error"] and not result.get("skipped")
    assert any("'heurstic' is none (did you mean heuristic?)" in f for f in result["failures"]), result["failures"]


def test_a_system_skipped_everywhere_fails_the_run_in_every_output(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(tmp_path, "elsewhere_factory", SCENARIOS / "sqlite" / "read-access-tracking.yaml",
                     SCENARIOS / "index")  # only design scenarios: a system of design "mine" runs none of them
    printed = capsys.readouterr().out
    assert code == 1, printed  # old code: "PASSED — 0/N scenario runs passed, N skipped", exit 0
    spec = f"{__name__}:elsewhere_factory"  # a plug-in's columns are named by its --system spec
    assert f"GATE FAILED: {spec}: not every scenario run skipped" in printed and "FAILED —" in printed
    assert "declares design mine" in printed  # one skip reason, named
    summary = json.loads((out / "summary.json").read_text())
    assert summary["passed"] is False
    assert [g["name"] for g in summary["gates"] if not g["passed"]] == [f"{spec}: not every scenario run skipped"]
    junit = (out / "junit.xml").read_text()
    assert 'failures="1"' in junit and "not every scenario run skipped" in junit
    assert "not every scenario run skipped" in (out / "summary.md").read_text()
    assert "not every scenario run skipped" in (out / "report.html").read_text()
