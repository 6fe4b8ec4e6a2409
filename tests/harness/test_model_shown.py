"""``expect_model_shown`` / ``expect_model_hidden``: what a step's model requests contained, on every model path."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.scenario import load_scenario, scenario_to_yaml

RECALL = """\
description: what the recall selector is shown
systems: [reference]
strategies: [model]
clock: 2026-03-02T09:00:00Z
facts:
  deploy: {type: project, match: ["blue-green"]}
memories:
  - {path: project/deploy.md, name: Deploy, description: how we deploy, type: project, body: We deploy blue-green,
     facts: [deploy], age: 1d}
  - {path: user/editor.md, name: Editor, description: editor choice, type: user, body: vim, age: 2d}
scripted_model:
  - {selected_memories: [project/deploy.md]}
steps:
  - recall:
      query: how do we ship releases
      expect: [deploy]
      expect_model_shown: SHOWN
      expect_model_hidden: HIDDEN
"""

EXTRACT = """\
description: what the extractor is shown
systems: [reference]
strategies: [model]
clock: 2026-03-02T09:00:00Z
scripted_model:
  - {patches: []}
steps:
  - session: s1
    turns: [{user: "Remember that the staging database is Postgres 16"}, {assistant: ok}]
    expect_extract: {model_shown: SHOWN}
"""


_SCRIPTED = "scripted_model:\n  - {selected_memories: [project/deploy.md]}\n"
"""Left out where the scenario runs only heuristic: replies no strategy asks for are a load error (round 17)."""


def _run(tmp_path: Path, text: str) -> int:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return main(["run", str(path), "--no-gates", "--out", str(tmp_path / "out")], environ={})


@pytest.mark.parametrize(("shown", "hidden", "code"), [
    ('["project/deploy.md", "how we deploy", "how do we ship releases"]', '["no such phrase"]', 0),
    ('["a phrase the manifest lacks"]', "[]", 1),  # not shown: fails
    ("[]", '["editor choice"]', 1),  # the other memory's description is in the manifest: shown, so it fails
])
def test_recall_requests_are_checked_both_ways(tmp_path: Path, shown: str, hidden: str, code: int) -> None:
    assert _run(tmp_path, RECALL.replace("SHOWN", shown).replace("HIDDEN", hidden)) == code


@pytest.mark.parametrize(("shown", "code"), [('["Postgres 16"]', 0), ('["Postgres 15"]', 1)])
def test_the_extractor_request_is_checked(tmp_path: Path, shown: str, code: int) -> None:
    assert _run(tmp_path, EXTRACT.replace("SHOWN", shown)) == code


def test_a_step_without_a_model_call_fails_a_shown_phrase(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = RECALL.replace("strategies: [model]", "strategies: [heuristic]").replace("SHOWN", '["deploy"]') \
        .replace(_SCRIPTED, "")
    assert _run(tmp_path, text.replace("HIDDEN", "[]")) == 1
    assert "made no model call" in capsys.readouterr().out


def test_the_keys_round_trip_through_the_dumper(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(RECALL.replace("SHOWN", '["a"]').replace("HIDDEN", '["b"]'))
    scenario = load_scenario(path)
    again = tmp_path / "again.yaml"
    again.write_text(scenario_to_yaml(scenario))
    outcome = load_scenario(again).steps[0].outcome  # type: ignore[union-attr]
    assert (outcome.model_shown, outcome.model_hidden) == (("a",), ("b",))


@pytest.mark.parametrize(("fallback", "code"), [("none", 0), ("timeout", 1)])
def test_expect_fallback_none_on_recall_means_no_fallback(tmp_path: Path, fallback: str, code: int) -> None:
    text = RECALL.replace("      expect_model_shown: SHOWN\n      expect_model_hidden: HIDDEN\n",
                          f"      expect_fallback: {fallback}\n")
    assert _run(tmp_path, text) == code


def test_a_hidden_phrase_needs_a_model_call_to_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = RECALL.replace("strategies: [model]", "strategies: [heuristic]").replace("      expect_model_shown: SHOWN\n", "") \
        .replace(_SCRIPTED, "")
    assert _run(tmp_path, text.replace("HIDDEN", '["postgres"]')) == 1  # never passes by absence
    assert "made no model call" in capsys.readouterr().out
