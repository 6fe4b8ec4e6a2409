"""Recall expectations no system can meet, refused at load (round 18) instead of failing every run.

Each is impossible by the recall contract every run checks (``harness/replay/_expect.py``; spec §7.1-§7.3), whatever
the system does:

- ``expect_selected`` naming more memories than recall may return: ``k`` when stated, else, in a scenario of
  ``design: qwen-file``, the specification's limit of 5 (spec §7.2, ``limit=5``); a run holds the selection to at
  most that many. (A portable scenario's limit is each system's own ``recall_limit``: not known at load.)
- ``expect_selected`` naming one memory twice: a selection that holds a memory twice fails the contract.
- ``expect_covered`` naming a fact the probe does not ``expect``: coverage is counted among the expected facts only,
  so that fact is never in it.
- a fact both in ``expect_covered`` (a selected memory must cover it) and in ``forbid`` (none may).

and in a ``check`` step, which judges one moment: a fact in both ``facts_present`` and ``facts_absent``, a path in
both ``files_present`` and ``files_absent``.

Outcome expectations no run of the scenario can meet (round 19), on extract (``expect_extract``, ``expect_trailing``),
dream, recall and forget steps, when the strategies the step runs with are known (its own ``strategy``, its
``strategy_overrides`` entry, else the scenario's ``strategies``; none of these: any strategy may run, nothing is
judged):

- ``expect_strategy`` (``strategy`` in an extract mapping) naming a strategy that is neither one the step runs with,
  nor ``heuristic`` (every model strategy's fallback, and what a ranked strategy runs outside recall), nor ``none``
  (nothing ran): the strategy that answers is always one of those.
- ``expect_fallback`` (``fallback``) other than ``none`` on a step no model strategy runs: only a model path falls
  back, so no fallback reason is ever reported.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import yaml

from harness.scenario._registry import MODEL_STRATEGIES
from harness.scenario._types import CheckStep, DreamStep, ForgetStep, RecallStep, SessionStep, Step
from harness.scenario._yaml import NodeReader

QWEN_RECALL_LIMIT: Final = 5
"""The qwen-file design's recall limit (qwen spec §7.2: ``limit=5``), what an unstated ``k`` means there."""


def _item(node: yaml.Node, i: int) -> yaml.Node:
    return node.value[i] if isinstance(node, yaml.SequenceNode) and i < len(node.value) else node


def refuse_impossible(ctx: NodeReader, r: dict[str, yaml.Node], here: str, step: RecallStep) -> RecallStep:
    """``step`` unless one of its expectations can never hold (a located error naming the item that makes it so)."""
    selected = step.expect_selected
    if selected is not None:
        limit = step.k if step.k is not None else QWEN_RECALL_LIMIT if ctx.design == "qwen-file" else None
        if limit is not None and len(selected) > limit:
            whose = f"k: {limit}" if step.k is not None else "the qwen-file design's limit, spec §7.2"
            raise ctx.fail(_item(r["expect_selected"], limit), f"{here}.expect_selected[{limit}]",
                           f"expects {len(selected)} memories selected, but recall returns at most {limit} ({whose}): "
                           "this could never pass")
        for i, path in enumerate(selected):
            if path in selected[:i]:
                raise ctx.fail(_item(r["expect_selected"], i), f"{here}.expect_selected[{i}]",
                               f"{path!r:.60} is named twice: a selection never holds a memory twice")
    for i, fact in enumerate(step.expect_covered or ()):
        if fact not in step.expect:
            raise ctx.fail(_item(r["expect_covered"], i), f"{here}.expect_covered[{i}]",
                           f"{fact!r:.60} is not in this probe's expect: coverage counts expected facts only, so "
                           "this could never pass")
        if fact in step.forbid:
            raise ctx.fail(_item(r["expect_covered"], i), f"{here}.expect_covered[{i}]",
                           f"{fact!r:.60} is also forbidden: a selection cannot both cover it and not")
    return step


def refuse_contradictions(ctx: NodeReader, c: dict[str, yaml.Node], here: str, step: CheckStep) -> CheckStep:
    """``step`` unless it states a thing and its opposite at one moment (a located error at the second statement)."""
    for present, absent, what in (("facts_present", "facts_absent", "fact"), ("files_present", "files_absent", "file")):
        wanted = getattr(step, present)
        for i, name in enumerate(getattr(step, absent)):
            if name in wanted:
                raise ctx.fail(_item(c[absent], i), f"{here}.{absent}[{i}]",
                               f"{what} {name!r:.60} is also in {present}: one check cannot find it both present and "
                               "absent")
    return step


def _entries(node: yaml.Node | None, names: tuple[str, str]) -> list[tuple[str, yaml.Node, str]]:
    """``(name, key node, value)`` of ``node``'s (a checked mapping's) keys among ``names``."""
    if not isinstance(node, yaml.MappingNode):
        return []
    return [(k.value, k, v.value) for k, v in node.value
            if isinstance(k, yaml.ScalarNode) and k.value in names and isinstance(v, yaml.ScalarNode)]


def refuse_unrun_strategies(ctx: NodeReader, steps_node: yaml.Node, steps: Sequence[Step],
                            overrides: dict[int, str], strategies: tuple[str, ...]) -> None:
    """Refuse an outcome's strategy or fallback reason no strategy the step runs with can report (located at its key)."""
    for i, (node, step) in enumerate(zip(steps_node.value, steps, strict=True)):
        top = {k.value: v for k, v in node.value if isinstance(k, yaml.ScalarNode)}
        runs = (overrides[i],) if i in overrides else strategies
        if isinstance(step, SessionStep):
            checked = [(f"steps[{i}].expect_extract", top.get("expect_extract"), runs),  # trailing runs: any step's
                       (f"steps[{i}].expect_trailing", top.get("expect_trailing"),
                        (*strategies, *overrides.values()) if strategies else ())]
            names = ("strategy", "fallback")
        elif isinstance(step, RecallStep | ForgetStep | DreamStep):
            kind = "dream" if isinstance(step, DreamStep) else "recall" if isinstance(step, RecallStep) else "forget"
            pinned = getattr(step, "strategy", None)
            checked = [(f"steps[{i}].{kind}", top.get(kind), (pinned,) if pinned else runs)]
            names = ("expect_strategy", "expect_fallback")
        else:
            continue
        for n, (here, mapping, ran) in enumerate(checked):
            if not ran:
                continue
            for name, key, value in _entries(mapping, names):
                runs_text = f"this step runs only with {', '.join(dict.fromkeys(ran))}"
                if name == names[0] and value not in (*ran, "heuristic", "none"):
                    raise ctx.fail(key, f"{here}.{name}", f"expects strategy {value!r:.60}, but {runs_text}: the "
                                   "strategy that answers is one of those, heuristic (a fallback) or none, so this "
                                   "could never pass")
                if name == names[1] and value != "none" and not set(ran) & set(MODEL_STRATEGIES):
                    raise ctx.fail(key, f"{here}.{name}", f"expects fallback {value!r:.60}, but {runs_text}, which "
                                   "call no model: only a model strategy falls back, so this could never pass")
                if n == 0 and (column := _failing_column(name == names[0], value, ran)) is not None:
                    raise ctx.fail(key, f"{here}.{name}", f"expects {name.split('_')[-1]} {value!r:.60}, but the "
                                   f"{column} column runs this step too, where this could never pass (an expectation "
                                   "holds in every column the step runs: pin the step with its own strategy)")


def _failing_column(strategy: bool, value: str, ran: tuple[str, ...]) -> str | None:  # noqa: FBT001
    """Round 20: the first column (of several the step runs with) that can never report ``value``: a strategy other
    than its own, heuristic or none; a fallback reason other than none where no model runs. The checks above judged
    only the columns together, so ``strategies: [heuristic, model]`` with ``expect_strategy: model`` loaded, and its
    heuristic column failed every run."""
    for column in dict.fromkeys(ran):
        if strategy and value not in (column, "heuristic", "none"):
            return column
        if not strategy and value != "none" and column not in MODEL_STRATEGIES:
            return column
    return None
