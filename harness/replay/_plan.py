"""Which systems a run replays, with which scenarios, and what its summary columns are called."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from harness.errors import HarnessError
from harness.scenario import Scenario, base_strategy
from harness.systems import ALL_SYSTEMS, DEFAULT_SYSTEMS, OPT_IN, SHIPPED_DESIGNS, SYSTEMS


def strategies_for(scenario: Scenario, requested: Sequence[str] | None) -> list[str]:
    """The strategies a scenario runs with: the requested ones it allows, or its own list, else ``heuristic``."""
    if requested is None:
        return list(scenario.strategies) or ["heuristic"]
    return [s for s in requested if not scenario.strategies or base_strategy(s) in scenario.strategies]


def system_list(text: str | None) -> tuple[bool, list[str], list[str]] | None:
    """``--system all`` or a comma-separated list (``reference,sqlite,mypkg.memory:factory``, ``all,mypkg.mod:f``):
    (every shipped system?, the shipped names listed, your own ``module:factory`` specs), each system in one report;
    None for one system (or none) as before."""
    if not text or ("," not in text and text != ALL_SYSTEMS):
        return None
    items = [x.strip() for x in text.split(",")]
    if not all(items) or len(set(items)) != len(items):
        raise HarnessError(f"--system {text}: expected a comma-separated list of {ALL_SYSTEMS}, shipped system names "
                           "and module:factory specs, each once")
    for x in items:
        if spec_problem(x, alone=False) is not None:
            raise HarnessError(f"--system {text}: {x!r} is neither {ALL_SYSTEMS}, a shipped system "
                               f"({', '.join(SYSTEMS)}) nor module:factory (a variant such as sqlite:seed runs alone)")
    return ALL_SYSTEMS in items, [x for x in items if x in SYSTEMS], [x for x in items if x != ALL_SYSTEMS and x not in SYSTEMS]


def spec_problem(spec: str, *, alone: bool) -> str | None:
    """Why ``spec`` is no ``--system`` value (None when it is one): ``all``, a shipped name, ``module:factory`` (both
    parts named) or, ``alone`` (not in a list), a shipped system's ``NAME:VARIANT``. One rule for ``run``'s lists and
    ``record``'s single spec, which ``record`` checks before it probes the model server (round 13)."""
    module, colon, factory = spec.partition(":")
    if spec == ALL_SYSTEMS or spec in SYSTEMS or (alone and module in SYSTEMS):
        return None
    if module in SYSTEMS:
        return "a variant such as sqlite:seed runs alone"
    if colon and module.strip() and factory.strip(" :"):
        return None
    return f"expected {ALL_SYSTEMS}, a shipped system ({', '.join(SYSTEMS)}), NAME:VARIANT or module:factory"


def system_plan(spec: str | None, selected: Sequence[Scenario], *, every: bool = False, names: Sequence[str] = (),
                plugins: Sequence[str] = ()) -> list[tuple[str, str | None, list[Scenario]]]:
    """(name, --system spec, scenarios) per system the run replays. No ``--system``: every shipped system but the
    ``OPT_IN`` ones (``every``, ``--system all``: those too; ``names``: the shipped ones a list names), each with the
    scenarios written for it (:func:`_targets`); a shipped system's name narrows the run to it; a system of your own
    replays every scenario (those for another design or system are reported skipped, with the reason), alone or
    after the shipped ones (``plugins``). A scenario no shipped system runs (``design: sqllite``) goes to the first,
    which reports why it is skipped; one written only for an opt-in system waits for a run that names it."""
    everything = list(selected)
    if spec is None:
        names = list(SYSTEMS if every else names if names or plugins else DEFAULT_SYSTEMS)
        named = set(names) & OPT_IN
        waiting = sorted({n for s in selected if s.systems and set(s.systems) <= OPT_IN for n in s.systems} - named)
        selected = [s for s in selected if not s.systems or not set(s.systems) <= OPT_IN or set(s.systems) & named]
    else:
        name = spec.split(":", 1)[0]
        if name not in SYSTEMS:
            return [(spec, spec, list(selected))]
        names = [name]
    plan = []
    for name in names:
        part = [s for s in selected if _targets(s, name) or (spec is None and name == names[0]
                                                            and not any(_targets(s, n) for n in names))]
        if part:
            plan.append((name, spec if spec is not None else None if name == "reference" else name, part))
    plan += [(p, p, everything) for p in plugins if everything]
    if not plan:
        hint = f"; scenarios for {', '.join(waiting)} run with --system NAME or all" if spec is None and waiting else ""
        raise HarnessError(f"no selected scenario targets system {spec or ', '.join(names)} (check the scenarios' "
                           f"systems:, --tag and --shard{hint})")
    return plan


def _targets(scenario: Scenario, name: str) -> bool:
    """Written for built-in system ``name``: ``design:`` (if any) is its design; ``systems:`` (if any) names it."""
    return (not scenario.design or scenario.design == SHIPPED_DESIGNS.get(name)) \
        and (not scenario.systems or name in scenario.systems)


def split_column(column: str, system: str = "reference") -> tuple[str, str]:
    """A summary column's (strategy, system): ``heuristic`` the run's own system, ``heuristic@sqlite`` another's."""
    strategy, sep, other = column.partition("@")
    return strategy, (other if sep else system)


def column_label(strategy: str, system: str, primary: str) -> str:
    """The inverse of :func:`split_column`: the primary (first) system's columns keep the bare strategy name."""
    return strategy if system == primary else sys.intern(f"{strategy}@{system}")  # one string for a column's probes


def plan_primary(plan: Sequence[tuple[str, str | None, Sequence[Scenario]]], spec: str | None,
                 names: Sequence[str] = ()) -> str:
    """The system whose columns keep the bare strategy names: the reference in a run over every shipped system
    (even when a tag or shard leaves it no scenario), the first shipped one a ``--system`` list names (else its first
    system of your own), else the one system the run names."""
    if spec is None:
        return names[0] if names else "reference" if plan[0][0] in SYSTEMS else plan[0][0]
    return plan[0][0]


def plan_columns(plan: Sequence[tuple[str, str | None, Sequence[Scenario]]], requested: Sequence[str] | None,
                 primary: str) -> tuple[str, ...]:
    """The summary columns of a run over ``plan`` (:func:`system_plan`), system by system."""
    return tuple(column_label(x, name, primary) for name, _, part in plan
                 for x in dict.fromkeys(y for s in part for y in strategies_for(s, requested)))


def plan_proxied(plan: Sequence[tuple[str, str | None, Sequence[Scenario]]], typed: str | None = None) -> bool:
    """Whether a system of ``plan`` with scenarios to replay calls its models through the model proxy (its factory
    says ``model_proxy = True``; a plug-in's is read in a child process). ``typed``: what ``--system`` said (``all``),
    for an opt-in system's import error."""
    from harness.replay._factory import load_factory, shipped
    from harness.replay._inspect import plugin_traits

    for name, spec, part in plan:
        key = spec or name
        if part and (getattr(load_factory(key, typed=typed if name in OPT_IN else None), "model_proxy", False)
                     if shipped(key) else plugin_traits(key).model_proxy):
            return True
    return False
