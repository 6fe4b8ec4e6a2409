"""``memharness conformance``: the shipped systems and the worked example are ok; a system broken in one capability
(one break per capability, plus a missing method) is named, row by row (issue 31)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.cli._conformance import conformance
from harness.system import reference_factory
from memory_core.events import NullSink
from tests.harness.conftest import SCENARIOS


class _Broken:
    """The reference with one method replaced (or hidden: ``None``)."""

    def __init__(self, inner: Any, overrides: dict[str, Any]) -> None:
        self._inner, self._overrides = inner, overrides

    def __getattr__(self, name: str) -> Any:
        if name in self._overrides:
            value = self._overrides[name]
            if value is None:
                raise AttributeError(name)
            return value(self._inner) if callable(value) else value
        return getattr(self._inner, name)


def _result(method: str, **fields: Any) -> Callable[[Any], Any]:
    return lambda inner: lambda *a, **k: dataclasses.replace(getattr(inner, method)(*a, **k), **fields)


BREAKS: dict[str, dict[str, Any]] = {
    "core (recall, extract, dream, forget, documents)": {"recall": _result("recall", selected=())},
    "dream": {"dream": lambda inner: lambda *a, **k: dataclasses.replace(inner.dream(*a, **k), status="noop",
                                                                          deduped=0)},
    "dream_gates": {"dream": lambda inner: lambda sid, **k: inner.dream(sid, **{**k, "force": True})},
    "extract_queue": {"hold_extractions": lambda inner: lambda **k: None},
    "file_index": {"index_text": lambda inner: lambda: "", "loaded_index": lambda inner: lambda: ""},
    "file_paths": {"documents": lambda inner: lambda: [dataclasses.replace(d, id=d.id.upper())
                                                        for d in inner.documents()]},
    "io_faults": {"inject_fault": lambda inner: lambda *a, **k: None},
    "locks": {"plant_lock": lambda inner: lambda *a, **k: None},
    "memory_tool": {"add_turns": lambda inner: lambda sid, turns, **k: inner.add_turns(
        sid, [dataclasses.replace(t, kind="user") if t.kind == "tool_write" else t for t in turns], **k)},
    "raw_files": {"seed": lambda inner: lambda memory, **k: inner.seed(
        dataclasses.replace(memory, raw=memory.raw[::-1]) if memory.raw is not None else memory, **k)},
    "recall_prompt": {"recall": _result("recall", prompt="")},
    "state_files": {"plant_state": lambda inner: lambda file, text, **k: inner.plant_state(file, "{", **k)},
    "stray_files": {"stray_files": lambda inner: lambda: ["../outside.txt"]},
    "system_checks": {"system_check": lambda inner: lambda name, expected: f"{name}: not what was asked"},
    "events": {},
    "warnings": {"extract": _result("extract", warnings=()), "dream": _result("dream", warnings=()),
                 "forget": _result("forget", warnings=())},
}
"""One break per capability the reference declares (``events`` breaks the sink instead: ``broken_events``)."""


def _factory(capability: str) -> Callable[..., Any]:
    def factory(workdir: Path, clock: Any, model: Any, events: Any) -> Any:
        return _Broken(reference_factory(workdir, clock, model, events), BREAKS[capability])
    return factory


for _cap in BREAKS:
    if _cap != "events":
        globals()["broken_" + _cap.split(" ")[0]] = _factory(_cap)


def broken_events(workdir: Path, clock: Any, model: Any, events: Any) -> Any:
    return reference_factory(workdir, clock, model, NullSink())


def no_lock_held(workdir: Path, clock: Any, model: Any, events: Any) -> Any:
    return _Broken(reference_factory(workdir, clock, model, events), {"lock_held": None})


def _rows(spec: str) -> dict[str, tuple[str, str]]:
    return {r.capability: (r.verdict, r.detail) for r in conformance(spec, [SCENARIOS], per_capability=8)}


@pytest.mark.parametrize("system", ["reference", pytest.param("sqlite", marks=pytest.mark.slow),  # its cases include
                                    "tests.example_system:factory"])  # a litellm transport fault: 3-4 s of import
def test_the_shipped_systems_and_the_example_conform(system: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", str(SCENARIOS), "--system", system], environ={}) == 0
    out = capsys.readouterr().out
    assert "every declared capability: ok" in out
    assert " wrong" not in out
    assert "missing method" not in out


@pytest.mark.parametrize("capability", list(BREAKS))
def test_a_break_in_one_capability_is_named_and_only_that_one(capability: str) -> None:
    rows = _rows(f"tests.harness.test_conformance:broken_{capability.split(' ')[0]}")
    row = next(v for k, v in rows.items() if k.split(" ")[0] == capability.split(" ")[0])
    assert row[0] == "wrong", f"{capability}: {row}"
    assert row[1]  # what differed: scenario, step, message
    # the break is not noise everywhere: most other rows still pass (a case leans on more than its capability, so a
    # break can also show in the rows that use it: a recall that selects nothing fails every row that recalls)
    ok = [k for k, v in rows.items() if v[0] == "ok"]
    assert len(ok) >= 3, rows


def test_a_missing_method_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", str(SCENARIOS), "--system", "tests.harness.test_conformance:no_lock_held"],
                environ={}) == 1
    out = capsys.readouterr().out
    assert "locks" in out
    assert "missing method: lock_held" in out
    # and the exit 1 above is what `memharness --help` promises for a missing method, not only for a wrong one
    import harness.cli

    top_help = (Path(harness.cli.__file__).parent / harness.cli.TOP_HELP_FILE).read_text()
    assert "exit 1 on any wrong or missing method" in " ".join(top_help.split())


def test_untested_capabilities_are_not_called_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = tmp_path / "scenarios"
    one.mkdir()
    (one / "p.yaml").write_text((SCENARIOS / "recall" / "multi-fact.yaml").read_text())
    assert main(["conformance", str(one), "--system", "reference"], environ={}) == 0
    out = capsys.readouterr().out
    assert "untested: no scenario given exercises it for this design" in out
    assert "every declared capability: ok" not in out
    assert f"untested: no scenario in {one} exercises them" in out
