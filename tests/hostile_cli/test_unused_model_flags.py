"""Model options given to a run that calls no model are said, not taken in silence (hostile probe, round 13: ``run
--model X`` or ``--api-base URL`` on a heuristic-only selection was accepted without a word). Every subset of the four
options, generated; a run that does call a model says nothing of the kind."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tests.harness.conftest import SCENARIOS
from tests.hostile_cli._support import cli

OPTIONS = {"--model": ["--model", "openai/nothing"], "--api-base": ["--api-base", "http://127.0.0.1:9/v1"],
           "--record": ["--record"], "--live": ["--live"]}
SUBSETS = [c for n in range(len(OPTIONS) + 1) for c in itertools.combinations(OPTIONS, n)
           if not {"--record", "--live"} <= set(c)]  # the two modes exclude each other (a usage error of its own)


@pytest.mark.parametrize("given", SUBSETS, ids=lambda c: "+".join(c) or "none")
def test_unused_model_options_are_named_in_one_note(given: tuple[str, ...], tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    args = [a for name in given for a in OPTIONS[name]]
    o = cli(["run", str(SCENARIOS / "recall" / "multi-fact.yaml"), *args, "--no-gates", "--out", str(tmp_path / "o")],
            capsys)
    assert o.code == 0, o.err
    notes = [line for line in o.err.splitlines() if "unused: no scenario run selected calls a model" in line]
    if not given:
        assert notes == []
    else:
        assert notes == [f"note: {', '.join(n for n in OPTIONS if n in given)} unused: no scenario run selected calls "
                         "a model (strategy model, or a system behind the model proxy)"]


def test_a_run_that_calls_a_model_says_nothing_of_the_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    o = cli(["run", str(SCENARIOS / "model"), "--no-gates", "--out", str(tmp_path / "o")], capsys)
    assert o.code == 0, o.err
    assert "unused: no scenario run selected calls a model" not in o.err
