"""What a plug-in system declares as ``name``, ``design`` and ``strategies`` (hostile probe, round 13; generated).

On the old code a ``name`` or ``design`` that was not text (``5``, ``b"x"``, a list) was read as no name, so the
scenarios written for the system were skipped without a word; ``strategies = {"heurstic"}`` (or any set of names the
harness does not have) skipped every scenario run, and the run said ``PASSED — 0/60 scenario runs passed, 60
skipped`` with exit 0. Now a declaration is text / registered names or the system's failure, one line naming the
attribute.
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
    got: str | None = None
    try:
        got = read(system)
    except SystemFailure as exc:
        failure = str(exc)
    else:
        failure = ""
    assert bool(failure) != wanted, value  # old code: 5, b"x" and a list were read as "" (no name), "a\nb" kept
    if failure:
        assert failure.startswith(f"{SYSTEM_FAILED}: its {attr} is ")
        assert "\n" not in failure
    else:
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
    got: frozenset[str] | None = None
    try:
        got = declared_strategies(types.SimpleNamespace(strategies=kind(names)))
    except SystemFailure as exc:
        failure = str(exc)
    else:
        failure = ""
    unknown = sorted(set(names) - set(STRATEGY_NAMES))
    assert bool(failure) == bool(unknown)  # refused exactly when a name is one the harness does not have
    if failure:
        assert f"{one_line(unknown[0])[:40]!r} is none" in failure
        assert "\n" not in failure
        assert all(n in failure for n in STRATEGY_NAMES)  # the names it could have meant
    else:
        assert got == frozenset(names)


class _Declaring:
    """The reference system with one attribute overridden."""

    def __init__(self, inner: Any, **declared: Any) -> None:
        self._inner, self._declared = inner, declared

    def __getattr__(self, name: str) -> Any:
        return self._declared[name] if name in self._declared else getattr(self._inner, name)


def typo_factory(workdir: Path, clock: Any, model: Any, events: Any) -> _Declaring:
    return _Declaring(reference_factory(workdir, clock, model, events), strategies=frozenset({"heurstic"}))


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
    assert not result["error"]
    assert not result.get("skipped")
    assert any("'heurstic' is none (did you mean heuristic?)" in f for f in result["failures"]), result["failures"]
