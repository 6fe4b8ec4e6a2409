"""What a shipped system refuses of a scenario's input, found by ``memharness validate`` before any run (issue 33).

A memory's ``system:`` seed fields and a recall step's ``options`` are the system's to read: the loader passes them
through untouched, so before this only ``run`` found a field the system refuses (the scenario's error, exit 2) and
``validate`` had passed the file. Now ``validate`` seeds each memory into a scratch instance of each shipped system
the scenario targets (its ``design:``, or the shipped names in ``systems:``, built in its ``variant:``; a portable
scenario: each system a plain run gives it) and tries each recall step's options on it: the system's own code
decides, the code a run will use, so no rule is written twice. Opt-in systems (mem0) are not built here.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Final

from harness.errors import HarnessError, ScenarioInputError
from harness.replay._factory import load_factory
from harness.scenario import RecallStep, Scenario
from harness.system import Capability, capabilities_of, variant_factory
from harness.systems import DEFAULT_SYSTEMS, OPT_IN, SHIPPED_DESIGNS, SYSTEMS
from memory_core.clock import FixedClock

_SCRATCH: Final = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
"""Scratch instances live in memory where the machine offers it: a database file per scenario on disk made
``validate`` of the shipped suite 4.5 times slower (WAL set-up and close wait for the disk)."""


def needs_input_check(scenario: Scenario) -> bool:
    """Whether ``scenario`` gives a system anything only the system can judge (seed fields, recall options)."""
    return any(m.system for m in scenario.memories) or any(isinstance(s, RecallStep) and s.options
                                                           for s in scenario.steps)


def input_problems(scenario: Scenario) -> list[str]:
    """One ``file:line: field: problem`` line for each seed field set and recall option set a targeted shipped
    system refuses (``ScenarioInputError``); anything else a system raises is a run's business, not the file's."""
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
                index, line = memory.source
                try:
                    system.seed(memory, mtime=clock.now() - memory.age)
                except ScenarioInputError as exc:
                    out.append(f"{scenario.path}:{line}: memories[{index}].system: {exc}")
                except Exception:
                    continue
            if Capability.RECALL_OPTIONS not in capabilities_of(system):
                return out
            for i, step in enumerate(scenario.steps):
                if not isinstance(step, RecallStep) or not step.options:
                    continue
                try:
                    system.recall(step.query, now=clock.now(), limit=step.k, excluded=(), strategy="heuristic",
                                  options=step.options)
                except ScenarioInputError as exc:
                    line = scenario.step_lines[i] if i < len(scenario.step_lines) else 1
                    out.append(f"{scenario.path}:{line}: steps[{i}].recall.options: {exc}")
                except Exception:
                    continue
        finally:
            close = getattr(system, "close", None)
            if callable(close):
                close()
    return out
