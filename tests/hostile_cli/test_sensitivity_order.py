"""``memharness sensitivity`` refuses a bad ``--gates`` file before the suite and the mutant catalogue load
(hostile probe, round 13: the refusal came after ~4 s of CPU, 25 s on a loaded box; generated gate files)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import harness.cli._sensitivity as sensitivity_cli
from tests.harness.conftest import SCENARIOS
from tests.hostile_cli._support import cli

BAD = st.one_of(
    st.builds(lambda m: f'[[gate]]\nmetric = "{m}"\nmin = 0\n', st.sampled_from(["nope", "recall.f2", "scenarios"])),
    st.builds(lambda v: f'[[gate]]\nmetric = "recall.f1"\nmin = {v}\n', st.sampled_from(['"x"', "[]", "{}"])),
    st.builds(lambda k: f'[[gate]]\nmetric = "recall.f1"\n{k} = 1\n', st.sampled_from(["mni", "maxx", "vs_"])),
    st.sampled_from(["[[gate]\n", "gate = 1\n", "[[gate]]\nmetric = \n"]),
)


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(text=BAD)
def test_a_bad_gates_file_is_refused_before_anything_loads(text: str, tmp_path_factory: pytest.TempPathFactory,
                                                           capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    gates = tmp_path_factory.mktemp("g") / "gates.toml"
    gates.write_text(text, encoding="utf-8")

    def loaded(*_: Any, **__: Any) -> Any:
        raise AssertionError("the suite was loaded before --gates was checked")

    monkeypatch.setattr(sensitivity_cli, "load_all", loaded)
    o = cli(["sensitivity", str(SCENARIOS), "--gates", str(gates), "--out", str(gates.parent / "out")], capsys)
    assert o.code == 2, o.err
    (line,) = o.err.splitlines()
    assert line.startswith(f"memharness: {gates}:")  # the file and its line, not the assertion above
    assert not (gates.parent / "out").exists()


def test_a_good_gates_file_goes_on_to_load_the_suite(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    gates = tmp_path / "gates.toml"
    gates.write_text('[[gate]]\nmetric = "recall.f1"\nmin = 0\n', encoding="utf-8")
    monkeypatch.setattr(sensitivity_cli, "load_all", lambda *_a, **_k: [])  # stops there: "no scenario files"
    o = cli(["sensitivity", str(SCENARIOS), "--gates", str(gates), "--out", str(tmp_path / "out")], capsys)
    assert o.code == 2
    assert "no scenario files under" in o.err
