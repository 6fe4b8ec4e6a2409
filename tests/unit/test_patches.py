from __future__ import annotations

import pytest

from memory_core.files.patches import (
    Patch,
    candidate_summary,
    classify,
    dedupe_patches,
    extract_heuristic,
    normalize_patch,
    rejection_reason,
)


@pytest.mark.parametrize("word", ["today", "now", "currently", "for this task", "this session", "temporary",
                                  "temporarily"])
def test_each_transient_keyword_drops(word: str) -> None:
    assert rejection_reason(f"I always use tabs {word} in this repo") == "transient"
    assert rejection_reason(f"I always use tabs {word.upper()} in this repo") == "transient"


def test_transient_needs_a_word_boundary() -> None:
    assert rejection_reason("I know the snowfall data well") is None  # "now" inside "know"/"snow"


def test_length_and_question_filters() -> None:
    assert rejection_reason("short one!") == "too_short"  # 10 chars
    assert rejection_reason("exactly 12ch") is None
    assert rejection_reason("should we always use tabs?") == "question"


def test_explicit_remember_strips_the_verb() -> None:
    assert candidate_summary("Please remember :  the staging db is pg-stage-2") == "the staging db is pg-stage-2"
    assert candidate_summary("save that the staging db is pg-stage-2") == "the staging db is pg-stage-2"
    assert candidate_summary("note - deploys go through the release train") == "deploys go through the release train"


def test_keep_rules() -> None:
    assert candidate_summary("I prefer short commit messages") == "I prefer short commit messages"
    assert candidate_summary("the runbook lives at https://wiki.x/r") is not None
    assert candidate_summary("This is just chit chat about lunch") is None


@pytest.mark.parametrize(
    ("text", "topic"),
    [
        ("see https://grafana.internal/d/x for latency", "reference"),
        ("the oncall dashboard is the api one", "reference"),
        ("we prefer squash merges", "user"),
        ("my favorite editor is helix", "user"),
        ("always run the linter before pushing", "feedback"),
        ("answers should be terse", "feedback"),
        ("the release is planned for March 3", "project"),
        ("the repo uses a monorepo layout", "project"),
        ("nothing relevant in here at all", None),
    ],
)
def test_classification_order(text: str, topic: str | None) -> None:
    assert classify(text) == topic


def test_normalize_strips_bullet_and_filters() -> None:
    assert normalize_patch(Patch("user", "-   I   prefer tabs everywhere")) == Patch("user", "I prefer tabs everywhere")
    assert normalize_patch(Patch("user", "* too short")) is None


def test_dedupe_first_wins_by_topic_and_lowercase_summary() -> None:
    out = dedupe_patches([Patch("user", "I prefer tabs always", "a"), Patch("user", "I PREFER tabs always", "b"),
                          Patch("feedback", "I prefer tabs always")])
    assert [(p.topic, p.why) for p in out] == [("user", "a"), ("feedback", None)]


def test_extract_heuristic_end_to_end() -> None:
    patches = extract_heuristic([(0, "remember that the staging db is pg-stage-2 in the project"),
                                 (2, "what time is it?"), (4, "I prefer terse answers")])
    assert [(p.topic, p.summary, p.source_offset) for p in patches] == [
        ("project", "the staging db is pg-stage-2 in the project", 0),
        ("user", "I prefer terse answers", 4),
    ]
