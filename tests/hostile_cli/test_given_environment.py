"""``main(argv, environ)`` reads the environment it is given, never the process's (issue 33, round 12; left from
round 11).

Before: ``run`` and ``merge`` read ``GITHUB_ACTIONS`` and ``GITHUB_STEP_SUMMARY`` from ``os.environ`` (annotations
printed and a step summary appended for a caller that passed an environment without them), the run's history went
to the process's ``MEMHARNESS_HISTORY``, and ``report``, ``history`` and ``github comment`` read theirs from the
process too. Generated: which variables are in the process's environment, which in the one given, and with which
values; the outputs must follow the given one only.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from tests.harness.conftest import SCENARIOS
from tests.harness.test_report_outputs import FAILING
from tests.helpers import examples

NAMES = ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "MEMHARNESS_HISTORY")


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(process=st.sets(st.sampled_from(NAMES)), given_env=st.sets(st.sampled_from(NAMES)), failing=st.booleans())
def test_the_outputs_follow_the_given_environment_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str], process: set[str],
                                                      given_env: set[str], failing: bool) -> None:
    case = tmp_path / os.urandom(6).hex()
    case.mkdir()
    values = {"process": {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(case / "process-summary.md"),
                          "MEMHARNESS_HISTORY": str(case / "process-history.sqlite")},
              "given": {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(case / "given-summary.md"),
                        "MEMHARNESS_HISTORY": str(case / "given-history.sqlite")}}
    scenario = SCENARIOS / "recall" / "multi-fact.yaml"
    if failing:  # a failed scenario: a run under GitHub Actions annotates it
        scenario = case / "bad.yaml"
        scenario.write_text(FAILING, encoding="utf-8")
    out = case / "reports" / "run"
    capsys.readouterr()
    with monkeypatch.context() as scoped:
        for name in NAMES:
            scoped.delenv(name, raising=False)
        for name in process:
            scoped.setenv(name, values["process"][name])
        code = main(["run", str(scenario), "--strategy", "heuristic", "--system", "reference", "--no-gates",
                     "--out", str(out)], environ={n: values["given"][n] for n in given_env})
    printed = capsys.readouterr().out
    assert code == (1 if failing else 0), printed
    for name in NAMES:
        assert not Path(values["process"][name]).exists() or name == "GITHUB_ACTIONS", name
    annotated = "::error" in printed
    assert annotated == ("GITHUB_ACTIONS" in given_env and failing), printed
    summary = Path(values["given"]["GITHUB_STEP_SUMMARY"])
    assert summary.exists() == ("GITHUB_STEP_SUMMARY" in given_env)
    history = Path(values["given"]["MEMHARNESS_HISTORY"]) if "MEMHARNESS_HISTORY" in given_env \
        else out.parent / "history.sqlite"
    assert history.exists()
