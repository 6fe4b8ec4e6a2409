"""Scenario-language extensions: outcome expectations for every operation, fault steps, store-wide checks."""

from __future__ import annotations

from typing import Final

import yaml

from harness.scenario._registry import OUTCOME_STRATEGIES
from harness.scenario._types import EntryExpect, FaultStep, Outcome, Scalar
from harness.scenario._yaml import NodeReader

MODEL_FAULTS: Final = ("timeout", "connection", "rate_limit", "server_error", "malformed")
IO_FAULTS: Final = ("write_error", "vanish")
OUTCOME_KEYS: Final = ("expect_strategy", "expect_fallback", "expect_touched", "expect_event")
"""Outcome keys shared by dream, forget and recall steps (plus a count key per kind)."""
TOPICS: Final = ("user", "feedback", "project", "reference")


def outcome(ctx: NodeReader, nodes: dict[str, yaml.Node], here: str, *, count_key: str | None = None,
            prefix: str = "expect_") -> Outcome:
    """An ``Outcome`` from ``<prefix>strategy``, ``<prefix>fallback``, ``<prefix>touched``, ``<count_key>`` and
    ``<prefix>event`` keys of an already-checked mapping."""

    def key(name: str) -> str:
        return f"{prefix}{name}"

    return Outcome(
        strategy=ctx.string(nodes[key("strategy")], f"{here}.{key('strategy')}", choices=OUTCOME_STRATEGIES)
        if key("strategy") in nodes else None,
        fallback=ctx.text(nodes[key("fallback")], f"{here}.{key('fallback')}") if key("fallback") in nodes else None,
        touched=tuple(ctx.seq(nodes[key("touched")], f"{here}.{key('touched')}",
                              lambda n, p: ctx.string(n, p, choices=TOPICS)))
        if key("touched") in nodes else None,
        count=ctx.integer(nodes[count_key], f"{here}.{count_key}") if count_key and count_key in nodes else None,
        event=event(ctx, nodes[key("event")], f"{here}.{key('event')}") if key("event") in nodes else {},
    )


def event(ctx: NodeReader, node: yaml.Node, here: str) -> dict[str, Scalar]:
    keys = [k.value for k, _ in node.value] if isinstance(node, yaml.MappingNode) else []
    out: dict[str, Scalar] = {}
    for name, value in ctx.mapping(node, here, keys).items():
        scalar = ctx.scalar(value, f"{here}.{name}")
        if not isinstance(scalar, (str, int, float, bool)):
            raise ctx.fail(value, f"{here}.{name}", f"expected text, a number or true/false, got {scalar!r}")
        out[name] = scalar
    return out


def fault(ctx: NodeReader, node: yaml.Node, here: str) -> FaultStep:
    f = ctx.mapping(node, here, ("model", "io", "match", "times"))
    if ("model" in f) == ("io" in f):
        raise ctx.fail(node, here, "expected exactly one of 'model' or 'io'")
    return FaultStep(
        model=ctx.string(f["model"], f"{here}.model", choices=MODEL_FAULTS) if "model" in f else None,
        io=ctx.string(f["io"], f"{here}.io", choices=IO_FAULTS) if "io" in f else None,
        match=ctx.text(f["match"], f"{here}.match") if "match" in f else "*",
        times=ctx.integer(f["times"], f"{here}.times", minimum=1) if "times" in f else 1,
    )


def entries(ctx: NodeReader, node: yaml.Node, here: str) -> tuple[EntryExpect, ...]:
    def one(item: yaml.Node, field: str) -> EntryExpect:
        e = ctx.mapping(item, field, ("record", "summary", "why", "how_to_apply"))
        if "record" not in e:
            raise ctx.fail(item, field, "expected a 'record' (the record id or file path)")
        return EntryExpect(**{k: ctx.text(v, f"{field}.{k}") for k, v in e.items()})

    return tuple(ctx.seq(node, here, one))
