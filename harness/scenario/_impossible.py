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
"""

from __future__ import annotations

from typing import Final

import yaml

from harness.scenario._types import CheckStep, RecallStep
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
