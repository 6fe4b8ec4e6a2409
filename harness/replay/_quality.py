"""A real model's recall: what its answer must do (machinery, always checked) versus how good it is (quality).

A scenario's recall expectations ``require``, ``expect_selected``, ``expect_covered`` and ``forbid`` state what a
*good* selection is. Under the heuristic or a scripted model they are the system's contract. Under a recorded or
live model they grade the model's choice: a miss is a **quality miss** (counted in ``recall.quality_misses``,
listed in summary.md, gateable), not a failed run — a prompt change that makes a model choose worse shows there
and in the paired comparison, not as a broken build. Everything else a step states (``prompt_contains``,
``expect_strategy``, forget, extract and dream expectations) stays a hard check.

What a model path must do with the answer is machinery, checked on every model-path recall whatever the model
(qwen-memory-spec §7.4): a valid answer is used as given, in the model's order, cut to the limit; an invalid one
(not an array, an unknown name, too many) falls back to the heuristic, which ``recall.fallbacks`` counts and a gate
bounds (a scenario that expects a fallback says so with ``expect_fallback``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from harness.replay._expect import recall_expectations
from harness.scenario import MODEL_STRATEGIES

if TYPE_CHECKING:
    from harness.replay._models import CountingModel
    from harness.scenario import RecallStep

RECALL_PURPOSE: Final = "auto-memory-recall"
"""The recall selector's side-query purpose (spec §7.4), named here from the spec, not imported from the core."""

SCRIPTED: Final = "scripted"
"""The name of a scenario's own scripted model (``scripted_model:``): its answers are the scenario's, not a model's."""

Check = Callable[[bool, str], bool]


def grades_a_model(strategy_uses_model: bool, model: CountingModel | None) -> bool:  # noqa: FBT001
    """Whether a step's quality expectations grade a real model (recorded or live) rather than the system: a model
    strategy, a model that is not the scenario's script, and a call to it during this step, answered or not (an
    invalid answer falls back, and that selection is still the model path's outcome; a step that made no call, e.g.
    a cached decomposition, is the system's alone)."""
    return strategy_uses_model and model is not None and model.name != SCRIPTED and model.log.calls > 0


def soft(notes: list[str]) -> Check:
    """A check that notes a miss instead of failing (always returns True: the step is not failed by it)."""
    def check(ok: bool, message: str) -> bool:  # noqa: FBT001
        if not ok:
            notes.append(message)
        return True

    return check


def answered_selection(answers: Sequence[tuple[str, Mapping[str, Any]]], limit: int) -> tuple[str, ...] | None:
    """What spec §7.4 makes of the step's one recall answer: its names in its order, repeats once, cut to
    ``limit``; None when the step made no recall side-query or more than one (nothing to hold the result to)."""
    picks = [data for purpose, data in answers if purpose == RECALL_PURPOSE]
    if len(picks) != 1:
        return None
    names = picks[0].get("selected_memories")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return None  # the answer is invalid: the step must have fallen back, which the fallback check judges
    return tuple(dict.fromkeys(names))[:limit]


def follows_answer(check: Check, answers: Sequence[tuple[str, Mapping[str, Any]]], selected: Sequence[str],
                   limit: int, fallback: str | None) -> bool:
    """Spec §7.4: a recall that took the model's valid answer returns exactly that answer (in its order)."""
    if fallback:
        return True
    want = answered_selection(answers, limit)
    if want is None:
        return True
    return check(tuple(selected) == want,
                 f"recall does not follow the model's answer (spec §7.4: the answer's names in its order, cut to "
                 f"{limit}): the model answered {list(want)}, recall returned {list(selected)}")


def recall_verdict(check: Check, step: RecallStep, strategy: str, k: int, result: Any, covers: list[frozenset[str]],
                   found: list[str], metrics: dict[str, float | None], excluded: list[str],
                   model: CountingModel | None) -> tuple[bool, tuple[str, ...]]:
    """A recall step's verdict and its quality misses: the stated expectations (soft where a real model chose,
    which then adds ``quality_miss`` 0/1 to ``metrics``) and, on a model path, that the answer was followed."""
    misses: list[str] = []
    graded = grades_a_model(strategy in MODEL_STRATEGIES, model)
    ok = recall_expectations(check, step, strategy, k, result.selected, result.prompt, covers, found, metrics,
                             excluded, soft(misses) if graded else None)
    if model is not None:
        ok &= follows_answer(check, model.log.answers, result.selected, k, result.fallback_reason)
    if graded:
        metrics["quality_miss"] = float(bool(misses))
    if strategy in MODEL_STRATEGIES:  # paired comparisons of a model keep only what a real model answered
        metrics["model_answered"] = float(graded)
    return ok, tuple(misses)
