"""Which capability each step needs (a step needing one the system lacks is skipped, with this reason)."""

from __future__ import annotations

from collections.abc import Sequence

from harness.replay._records import ProbeKind
from harness.scenario import (
    CheckStep,
    DreamStep,
    FaultStep,
    ForgetStep,
    LockStep,
    RecallStep,
    Scenario,
    SessionStep,
    StateStep,
    Step,
)
from harness.system import Capability

PROBE_KIND: dict[type, ProbeKind] = {SessionStep: "extract", DreamStep: "dream", RecallStep: "recall",
                                      ForgetStep: "forget", CheckStep: "check", LockStep: "check", FaultStep: "check",
                                      StateStep: "check"}


def step_needs(step: Step) -> list[tuple[Capability, str]]:
    """The capabilities a step needs, each with the part of the step that needs it."""
    needs: list[tuple[Capability, str]] = []
    outcome = getattr(step, "outcome", None)
    if outcome is not None and outcome.warnings is not None:
        needs.append((Capability.WARNINGS, "warnings"))
    trailing = getattr(step, "expect_trailing", None)
    if (outcome is not None and outcome.event) or (trailing is not None and trailing.outcome.event):
        needs.append((Capability.EVENTS, "expect_event"))  # never passed by absence: skipped, with the reason
    if isinstance(step, StateStep):
        needs.append((Capability.STATE_FILES, f"state {step.file}"))
    if isinstance(step, SessionStep):
        if step.queued_behind:
            needs.append((Capability.EXTRACT_QUEUE, "queued_behind"))
        if any(t.kind == "tool_write" for t in step.turns):
            needs.append((Capability.MEMORY_TOOL, "tool_write"))
    elif isinstance(step, DreamStep):
        needs.append((Capability.DREAM, "dream"))
        if step.expect_reason is not None or step.expect_status == "skipped":
            needs.append((Capability.DREAM_GATES, "expect_reason"))
        if step.expect_reason == "locked":
            needs.append((Capability.LOCKS, "expect_reason: locked"))
    elif isinstance(step, LockStep):
        needs.append((Capability.LOCKS, "lock"))
    elif isinstance(step, FaultStep) and step.io is not None:
        needs.append((Capability.IO_FAULTS, f"fault io {step.io}"))
    elif isinstance(step, ForgetStep) and step.options:
        needs.append((Capability.FORGET_OPTIONS, "options"))
    elif isinstance(step, RecallStep):
        if step.prompt_contains or step.prompt_excludes:
            needs.append((Capability.RECALL_PROMPT, "prompt_contains"))
        if step.options:
            needs.append((Capability.RECALL_OPTIONS, "options"))
    elif isinstance(step, CheckStep):
        if step.index_within_limits is not None or step.index_contains or step.index_lines is not None \
                or step.loaded_index_contains:
            needs.append((Capability.FILE_INDEX, "index checks"))
        if step.files_present or step.files_absent:
            needs.append((Capability.FILE_PATHS, "files_present/files_absent"))
        if step.no_stray_files:
            needs.append((Capability.STRAY_FILES, "no_stray_files"))
        if step.system:
            needs.append((Capability.SYSTEM_CHECKS, "system checks"))
        if step.only_files is not None:
            needs.append((Capability.FILE_PATHS, "only_files"))
        if step.index_order:
            needs.append((Capability.FILE_INDEX, "index_order"))
        if step.lock_held is not None:
            needs.append((Capability.LOCKS, "lock_held"))
    return needs


def scenario_needs(steps: Sequence[Step]) -> list[list[tuple[Capability, str]]]:
    """``step_needs`` of every step, except that each step of a ``queued_behind`` queue needs what any of its steps
    needs: a queue runs whole or is skipped whole, never opened without being closed."""
    needs = [step_needs(step) for step in steps]
    groups: dict[str, list[int]] = {}
    for i, step in enumerate(steps):
        if isinstance(step, SessionStep) and step.queued_behind:
            groups.setdefault(step.queued_behind, []).append(i)
    for members in groups.values():
        union = list(dict.fromkeys(need for i in members for need in needs[i]))
        for i in members:
            needs[i] = union
    return needs


def step_kind(scenario: Scenario, step: int) -> str:
    """``session`` / ``dream`` / … for step ``step``, or ``seeding`` before the first step."""
    if 0 <= step < len(scenario.steps):
        return type(scenario.steps[step]).__name__.removesuffix("Step").lower()
    return "seeding"
