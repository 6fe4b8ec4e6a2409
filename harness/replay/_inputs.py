"""What a shipped system refuses of a scenario's input, found by ``memharness validate`` before any run (issue 33).

A memory's ``system:`` seed fields, a recall or forget step's ``options`` and a check step's ``system:`` checks are the
system's to read: the loader passes them through untouched, so before this only ``run`` found a field the system
refuses (the scenario's error, exit 2) and ``validate`` had passed the file. Now ``validate`` seeds each memory into a
scratch instance of each shipped system the scenario targets (its ``design:``, or the shipped names in ``systems:``,
built in its ``variant:``; a portable scenario: each system a plain run gives it) and tries each step's options and
system checks on it, in order: the system's own code decides, the code a run will use, so no rule is written twice.
Opt-in systems (mem0) are not built here.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from harness.errors import HarnessError, ScenarioInputError
from harness.replay._factory import load_factory
from harness.scenario import CheckStep, ForgetStep, RecallStep, Scenario, SeedMemory
from harness.system import Capability, capabilities_of, variant_factory
from harness.systems import DEFAULT_SYSTEMS, OPT_IN, SHIPPED_DESIGNS, SYSTEMS
from memory_core.clock import FixedClock

_SCRATCH: Final = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
"""Scratch instances live in memory where the machine offers it: a database file per scenario on disk made
``validate`` of the shipped suite 4.5 times slower (WAL set-up and close wait for the disk)."""


def needs_input_check(scenario: Scenario) -> bool:
    """Whether ``scenario`` gives a system anything only the system can judge (seed fields, options, system checks)."""
    return any(m.system for m in scenario.memories) or any(_judged(s) is not None for s in scenario.steps)


def _judged(step: object) -> tuple[Capability, str] | None:
    """The capability a step needs the system to judge its input with, and the input's field name; None: nothing."""
    if isinstance(step, RecallStep) and step.options:
        return Capability.RECALL_OPTIONS, "recall.options"
    if isinstance(step, ForgetStep) and step.options:
        return Capability.FORGET_OPTIONS, "forget.options"
    if isinstance(step, CheckStep) and step.system:
        return Capability.SYSTEM_CHECKS, "check.system"
    return None


def input_problems(scenario: Scenario) -> list[str]:
    """One ``file:line: field: problem`` line for each seed field set, option set and system check a targeted
    shipped system refuses (``ScenarioInputError``); anything else a system raises is a run's business, not the
    file's."""
    if not needs_input_check(scenario):
        return []
    names = [n for n, d in SHIPPED_DESIGNS.items() if d == scenario.design] if scenario.design else \
        [n for n in scenario.systems if n in SYSTEMS and n not in OPT_IN] if scenario.systems else \
        list(DEFAULT_SYSTEMS)  # portable: every system a plain run gives it (an opt-in one needs its extra)
    problems: list[str] = []
    for name in names:
        for problem in _problems_in(scenario, name):
            if problem not in problems:  # both shipped systems of one design would say it twice
                problems.append(problem)
    return problems


def _problems_in(scenario: Scenario, name: str) -> list[str]:
    clock = FixedClock(scenario.clock)
    out: list[str] = []
    with tempfile.TemporaryDirectory(prefix="memharness-validate-", dir=_SCRATCH) as tmp:
        try:
            system = variant_factory(scenario, load_factory(name))(Path(tmp), clock, None, None)
        except (HarnessError, ValueError):  # a variant this system does not offer: the run skips it, saying why
            return []
        try:
            for memory in scenario.memories:
                index = memory.source[0]
                try:
                    system.seed(memory, mtime=clock.now() - memory.age)
                except ScenarioInputError as exc:
                    out.append(f"{scenario.path}:{seed_line(scenario, memory, exc)}: memories[{index}].system: {exc}")
                except Exception:
                    continue
            capabilities = capabilities_of(system)
            for i, step in enumerate(scenario.steps):
                judged = _judged(step)
                if judged is None or judged[0] not in capabilities:
                    continue
                step_line = scenario.step_lines[i] if i < len(scenario.step_lines) else 1
                field = f"steps[{i}].{judged[1]}"
                # a check step's system checks are independent (a run tries each): each is tried, and located, alone
                for given in ({name: value} for name, value in step.system.items()) if isinstance(step, CheckStep) \
                        else (None,):
                    try:
                        _try(system, step, clock, given)
                    except ScenarioInputError as exc:
                        inputs = given if given is not None else getattr(step, "options", {})
                        line = key_line(scenario, field, inputs, str(exc), step_line)
                        out.append(f"{scenario.path}:{line}: {field}: {exc}")
                    except Exception:
                        continue
        finally:
            close = getattr(system, "close", None)
            if callable(close):
                close()
    return out


def key_line(scenario: Scenario, field: str, given: Mapping[str, object], message: str, default: int) -> int:
    """The line of the key of ``given`` (the mapping at ``field``) that the system's ``message`` names first (round
    18: a refused seed field, option or system check was located at its step or memory); ``default`` when the
    message names none of them."""
    named = [(found.start(), key) for key in given
             if (found := re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", message))]
    return scenario.field_lines.get(f"{field}.{min(named)[1]}", default) if named else default


def seed_line(scenario: Scenario, memory: SeedMemory, exc: Exception) -> int:
    """The line of the seed field a system's refusal of ``memory`` names, else of its ``system:`` (or its entry)."""
    index, line = memory.source
    return key_line(scenario, f"memories[{index}].system", memory.system,
                    str(exc).removeprefix(f"memory {memory.path}: "), line)


def _try(system: Any, step: object, clock: FixedClock, checks: Mapping[str, Any] | None = None) -> None:
    """The step's input through the system's own code, as a run passes it (its outcome here is nobody's); ``checks``:
    those of a check step's system checks (default all)."""
    if isinstance(step, RecallStep):
        system.recall(step.query, now=clock.now(), limit=step.k, excluded=(), strategy="heuristic", options=step.options)
    elif isinstance(step, ForgetStep):
        system.forget(step.query, now=clock.now(), strategy="heuristic", options=dict(step.options))
    elif isinstance(step, CheckStep):
        for name, expected in (step.system if checks is None else checks).items():
            system.system_check(name, expected)
