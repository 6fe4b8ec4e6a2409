"""``memharness validate --strict``: every recall probe and every check step must state something that can fail."""

from __future__ import annotations

from harness.scenario._types import CheckStep, RecallStep, Scenario


def strict_problems(scenario: Scenario) -> list[str]:
    """One ``file:line: field: problem`` line per recall step that asserts nothing and is not marked ``measure``."""
    out = []
    for i, step in enumerate(scenario.steps):
        if isinstance(step, RecallStep) and not step.measure and not step.assertions():
            line = scenario.step_lines[i] if i < len(scenario.step_lines) else 1
            out.append(f"{scenario.path}:{line}: steps[{i}].recall: asserts nothing that can fail; add require "
                       "(a threshold above 0), expect_selected, expect_covered, forbid, expect_strategy, "
                       "expect_fallback, prompt_contains or expect_details — or measure: true for a deliberate measurement")
        if isinstance(step, CheckStep) and step == CheckStep():  # round 17: `check: {}`, `facts_present: []`
            line = scenario.step_lines[i] if i < len(scenario.step_lines) else 1
            out.append(f"{scenario.path}:{line}: steps[{i}].check: asserts nothing that can fail (every list empty, "
                       "nothing else set); state facts_present, facts_absent, files_present, index_contains, … or "
                       "drop the step")
    return out
