"""Invariants and metamorphic properties over any ``MemorySystem``, each expressed as a scenario with assertions.

A property turns a generated sample into a scenario whose expectations state the property for that sample;
the property holds when the replay passes. A failing sample (shrunk by Hypothesis) is therefore already a
regression scenario that ``memharness run`` reproduces.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from harness.replay import ScenarioResult
from harness.scenario import CheckStep, DreamStep, ForgetStep, RecallStep, Scenario, SessionStep, Step
from harness.tools import _hypothesis as hs

Run = Callable[[Scenario], ScenarioResult]


@dataclass(frozen=True)
class Thresholds:
    """User-set quality floors for planted-fact recall (per probe)."""

    min_precision: float = 0.0
    min_recall: float = 1.0


@dataclass(frozen=True)
class Property:
    """A named property: a sample strategy and a builder from sample to scenario-with-assertions."""

    name: str
    description: str
    samples: st.SearchStrategy[Any]
    build: Callable[[Any, Run], Scenario]
    strategy: str = "heuristic"


def _with(s: Scenario, name: str, steps: tuple[Step, ...], **changes: Any) -> Scenario:
    return dataclasses.replace(s, id=f"regressions/{name}", steps=steps, step_lines=(), tags=("regression", name),
                               **changes)


def _stored_before(s: Scenario, steps: tuple[Step, ...], run: Run) -> frozenset[str]:
    """The facts the system under test holds after ``steps`` (the end-of-scenario check of a run of just them)."""
    result = run(_with(s, "stored-before", steps))
    ends = [p for p in result.probes if p.kind == "check" and p.query == "end of scenario"]
    return frozenset(ends[-1].covered) if ends else frozenset()


def _claims_only_stored(s: Scenario, run: Run) -> tuple[Step, ...]:
    """``s``'s steps with each forget's ``expect_removed`` kept to the facts the system stored before it (round 18:
    a claim to remove a fact never stored fails the run, since it proves nothing; a generated conversation cannot
    know what a system's extraction keeps)."""
    steps = list(s.steps)
    for i, step in enumerate(steps):
        if isinstance(step, ForgetStep) and step.expect_removed:
            stored = _stored_before(s, tuple(steps[:i]), run)
            steps[i] = dataclasses.replace(step, expect_removed=tuple(f for f in step.expect_removed if f in stored))
    return tuple(steps)


def _index_caps(s: Scenario, run: Run) -> Scenario:
    return _with(s, "index-within-caps", (*_claims_only_stored(s, run), CheckStep(index_within_limits=True)),
                 description="Index stays within the spec §4.1 caps after any sequence of operations.")


def _replay_twice(s: Scenario, run: Run) -> Scenario:
    sessions = [st_ for st_ in s.steps if isinstance(st_, SessionStep)]
    again = tuple(dataclasses.replace(x, session=f"{x.session}-again") for x in sessions)
    return _with(s, "replay-adds-nothing", (*sessions, *again, CheckStep(max_entries_per_fact=1, no_stray_files=True)),
                 description="Replaying the same sessions a second time adds no entries.")


def _dream_retention(s: Scenario, run: Run) -> Scenario:
    facts = tuple(s.facts)
    return _with(s, "dream-retention-idempotent",
                 (DreamStep(force=True), CheckStep(facts_present=facts), DreamStep(force=True, expect_status="noop"),
                  CheckStep(facts_present=facts)),
                 description="Dream keeps every fact (retention 1) and a second dream changes nothing.")


def _forget_never_recalled(s: Scenario, run: Run) -> Scenario:
    sessions = tuple(x for x in s.steps if isinstance(x, SessionStep))
    stored = _stored_before(s, sessions, run)  # forget a fact the system stored: removing one it never held proves nothing
    gone = next((f for f in s.facts if f in stored), next(iter(s.facts)))
    steps: tuple[Step, ...] = (*sessions, ForgetStep(gone, (gone,) if gone in stored else ()),
                               RecallStep(f"what do you know about {gone}", (), forbid=(gone,)),
                               DreamStep(force=True), RecallStep(gone, (), k=5, forbid=(gone,)))
    return _with(s, "forgotten-never-recalled", steps, description="A forgotten fact is never recalled afterwards.")


def _recall_bounded(s: Scenario, run: Run) -> Scenario:
    sessions = tuple(x for x in s.steps if isinstance(x, SessionStep))
    probes = tuple(RecallStep(f"{f} and everything else", (f,), k=k, exclude_surfaced=True)
                   for f, k in zip(s.facts, [1, 2, 5, 1, 3], strict=False))
    return _with(s, "recall-bounded", (*sessions, *probes),
                 description="Recall returns at most k memories and never an excluded (already surfaced) one.")


def _order_independent(sample: tuple[Scenario, list[int]], run: Run) -> Scenario:
    s, permutation = sample
    sessions = [x for x in s.steps if isinstance(x, SessionStep)]
    turns = [t for x in sessions for t in x.turns if t.kind == "user"]
    probes = tuple(RecallStep(f"what do you know about {f}", (f,)) for f in s.facts)
    original = _with(s, "order-independent", (SessionStep("s1", tuple(turns)), *probes))
    reference = run(original)
    covered = [tuple(p.covered) for p in reference.probes if p.kind == "recall"]
    shuffled = tuple(turns[i] for i in permutation if i < len(turns))
    shuffled += tuple(t for i, t in enumerate(turns) if i not in permutation)
    checked = tuple(dataclasses.replace(p, expect_covered=c) for p, c in zip(probes, covered, strict=True))
    return _with(s, "order-independent", (SessionStep("s1", shuffled), *checked),
                 description="Independent facts give the same recall whatever order they were stated in.")


def _no_escape(sample: tuple[Scenario, tuple[object, ...]], run: Run) -> Scenario:
    s, replies = sample
    sessions = tuple(x for x in s.steps if isinstance(x, SessionStep))
    # the forget request matches nothing, so only the (hostile) model could make it touch a file
    steps: list[Step] = [*sessions, DreamStep(force=True), *(RecallStep(f, (f,)) for f in s.facts),
                         ForgetStep("forget the qqqq-nonexistent thing", ()),
                         CheckStep(no_stray_files=True, index_within_limits=True)]
    return _with(s, "no-write-outside-root", tuple(steps), strategies=("model",), scripted_model=tuple(replies) * 4,
                 description="No file is written outside the memory root, whatever a hostile model returns.")


def planted_recall(thresholds: Thresholds) -> Callable[[Scenario, Run], Scenario]:
    def build(s: Scenario, run: Run) -> Scenario:
        sessions = tuple(x for x in s.steps if isinstance(x, SessionStep))
        require = {"precision": thresholds.min_precision, "recall": thresholds.min_recall}
        probes = tuple(RecallStep(f"what do you know about {f}", (f,), require=require) for f in s.facts)
        return _with(s, "planted-fact-recall", (*sessions, *probes),
                     description=f"Recall of planted facts stays above precision {thresholds.min_precision} and "
                                 f"recall {thresholds.min_recall} per probe.")
    return build


def default_properties(thresholds: Thresholds = Thresholds()) -> list[Property]:
    """The property suite ``memharness fuzz`` runs."""
    plain = hs.conversations(paraphrases=False, forget=False, dream=False)
    return [
        Property("index-within-caps", "index within caps after any sequence of operations",
                 hs.conversations(), _index_caps),
        Property("replay-adds-nothing", "replaying the same session twice adds no entries", plain, _replay_twice),
        Property("dream-retention-idempotent", "dream never lowers retention and is idempotent",
                 hs.seeded_stores(), _dream_retention),
        Property("forgotten-never-recalled", "a forgotten fact is never recalled afterwards", plain,
                 _forget_never_recalled),
        Property("recall-bounded", "recall returns <= k and never an excluded file", plain, _recall_bounded),
        Property("order-independent", "independent facts: same recall whatever the order",
                 st.tuples(plain, st.permutations(list(range(8)))), _order_independent),
        Property("no-write-outside-root", "no write outside the memory root, whatever the model returns",
                 st.tuples(plain, hs.hostile_model_replies()), _no_escape, strategy="model"),
        Property("planted-fact-recall", "planted facts recalled above the thresholds", plain,
                 planted_recall(thresholds)),
    ]
