"""Which systems a run replays, with which scenarios, and what its summary columns are called."""

from __future__ import annotations

from collections.abc import Sequence

from harness.errors import HarnessError
from harness.scenario import Scenario, base_strategy
from harness.systems import DEFAULT_SYSTEMS, OPT_IN, SHIPPED_DESIGNS, SYSTEMS


def strategies_for(scenario: Scenario, requested: Sequence[str] | None) -> list[str]:
    """The strategies a scenario runs with: the requested ones it allows, or its own list, else ``heuristic``."""
    if requested is None:
        return list(scenario.strategies) or ["heuristic"]
    return [s for s in requested if not scenario.strategies or base_strategy(s) in scenario.strategies]


def system_plan(spec: str | None, selected: Sequence[Scenario], *,
                every: bool = False) -> list[tuple[str, str | None, list[Scenario]]]:
    """(name, --system spec, scenarios) per system the run replays. No ``--system``: every shipped system but the
    ``OPT_IN`` ones (``every``, ``--system all``: those too), each with the scenarios written for it (:func:`_targets`);
    a shipped system's name narrows the run to it; a system of your own replays every scenario (those for another
    design or system are reported skipped, with the reason). A scenario no shipped system runs (``design: sqllite``)
    goes to the first, which reports why it is skipped; one written only for an opt-in system waits for a run that
    names it."""
    if spec is None:
        names = list(SYSTEMS if every else DEFAULT_SYSTEMS)
        waiting = [] if every else sorted({n for s in selected if s.systems and set(s.systems) <= OPT_IN for n in s.systems})
        selected = [s for s in selected if every or not s.systems or not set(s.systems) <= OPT_IN]
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
    return strategy if system == primary else f"{strategy}@{system}"


def plan_primary(plan: Sequence[tuple[str, str | None, Sequence[Scenario]]], spec: str | None) -> str:
    """The system whose columns keep the bare strategy names: the reference in a run over every shipped system
    (even when a tag or shard leaves it no scenario), else the one system the run names."""
    return "reference" if spec is None else plan[0][0]


def plan_columns(plan: Sequence[tuple[str, str | None, Sequence[Scenario]]], requested: Sequence[str] | None,
                 primary: str) -> tuple[str, ...]:
    """The summary columns of a run over ``plan`` (:func:`system_plan`), system by system."""
    return tuple(column_label(x, name, primary) for name, _, part in plan
                 for x in dict.fromkeys(y for s in part for y in strategies_for(s, requested)))
