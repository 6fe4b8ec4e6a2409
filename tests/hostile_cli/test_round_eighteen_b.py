"""Round 18b (blind, generated): hostile plug-in systems that broke the replay's promises.

Found by a generator of plug-in systems (``--system module:factory``, ~300 generated modules: one method of a working
system replaced to return an odd value, raise an odd exception or mutate its arguments; one attribute replaced), run
through ``memharness run`` and classified by exit code and message. Each section below is one class; each test draws
its cases.

1. An exception whose class name cannot be read (a metaclass whose ``__name__`` property raises) escaped
   ``describe``: the run was INCOMPLETE (exit 2, ``RuntimeError: n``), blamed on the scenario. A class name of 5,000
   characters or with a line break was quoted whole (the protocol quotes at most 500 characters of the system's).
2. A ``HarnessError`` (or ``ScenarioError``, ``GateFileError`` …) the system raises itself passed through as the
   harness's own error: the run was INCOMPLETE (exit 2) and the verdict never said the system failed. Only
   ``ScenarioInputError`` (the documented refusal of a scenario input) and the harness's own aborts pass now.
3. What a system does to its arguments leaked out of its call: clearing the ``excluded`` list it was handed hid a
   leak of already-surfaced memories (the run PASSED); changing a seed memory's ``system`` fields or a turn's tool
   call ``input`` (plain dicts inside the frozen scenario) changed the scenario for the next run of it (another
   strategy, the same process), as did ``object.__setattr__`` on the frozen memory. Each call now gets its own copy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import harness.errors as errors
from harness.replay import RecallResult, replay
from harness.replay._observed import MESSAGE_CHARS, describe
from harness.scenario import load_scenario
from harness.system import Capability
from memory_core.errors import ReplayAborted
from tests.example_system import ExampleSystem
from tests.harness.conftest import OTel
from tests.helpers import examples

SETTINGS = settings(max_examples=examples(60), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# 1. ------------------------------------------------------------------------------------------------------------------


def _hostile_class(name: str, how: str) -> type[BaseException]:
    if how == "name":
        return type(name, (Exception,), {})

    class Meta(type):
        @property
        def __name__(cls) -> str:  # type: ignore[override]
            if how == "raises":
                raise RuntimeError("n")
            return name * 3
    return Meta(name or "E", (Exception,), {})


@SETTINGS
@given(name=st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=30).map(lambda s: s * 200),
       how=st.sampled_from(["name", "raises", "lies"]), message=st.text(max_size=40))
@example(name="\x01" * 200, how="name", message="")  # each control character escaped is four characters
def test_an_exception_is_described_on_one_short_line_whatever_its_class(name: str, how: str, message: str) -> None:
    text = describe(_hostile_class(name, how)(message))
    assert text.isprintable(), repr(text)
    assert len(text) <= 2 * 200 + MESSAGE_CHARS + 10, len(text)


# 2. and 3.: replays in this process, of one scenario, by a system that misbehaves in one way ------------------------

SCENARIO = """description: "what a system does to its arguments stays in its call"
tags: [hostile]
clock: 2026-03-02T09:00:00Z
facts:
  terse: {type: feedback, match: ["terse"]}
  tabs: {type: user, match: ["tabs"]}
memories:
  - {path: feedback/terse.md, name: Terse, description: terse answers, type: feedback, body: "Keep replies terse.",
     facts: [terse], system: {importance: 3}}
steps:
  - session: s1
    turns:
      - user: "I always indent with tabs."
      - assistant: "Noted."
        tool_calls:
          - {name: write_file, input: {file_path: "notes.md", content: "tabs"}}
  - recall: {query: "terse review please", k: 1, expect: [terse]}
  - recall: {query: "terse review please", k: 1, exclude_surfaced: true, expect: []}
  - forget: {query: "forget terse", expect_removed: [terse]}
"""


class Misbehaving(ExampleSystem):
    """The example system, with ``hook(method, arguments)`` run first in every call; it records what it was given."""

    def __init__(self, hook: Callable[[str, dict[str, Any]], None], seen: list[Any]) -> None:
        super().__init__()
        self.hook, self.seen = hook, seen

    def seed(self, memory: Any, *, mtime: datetime) -> None:
        self.seen.append(("seed", repr(memory), dict(memory.system)))
        self.hook("seed", {"memory": memory})
        super().seed(memory, mtime=mtime)

    def add_turns(self, session_id: str, turns: Sequence[Any], *, now: datetime) -> None:
        self.seen.append(("turns", repr(turns)))
        self.hook("add_turns", {"turns": turns})
        super().add_turns(session_id, turns, now=now)

    def recall(self, query: str, *, now: datetime, limit: int | None, excluded: Sequence[str],
               strategy: str) -> RecallResult:
        self.hook("recall", {"excluded": excluded})
        ids = tuple(d.id for d in self.documents())[: limit or 5]  # ignores `excluded`: a leak once it hides it
        return RecallResult(selected=ids, strategy="heuristic")

    def forget(self, query: str, *, now: datetime, strategy: str) -> Any:
        self.hook("forget", {})
        return super().forget(query, now=now, strategy=strategy)


def _replays(tmp_path: Path, hook: Callable[[str, dict[str, Any]], None], times: int = 1) -> tuple[list[Any], list[Any]]:
    path = tmp_path / "args.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    scenario = load_scenario(path)
    seen: list[Any] = []
    otel = OTel()
    try:
        results = [replay(scenario, strategy="heuristic", telemetry=otel.telemetry,
                          system_factory=lambda w, c, m, e: Misbehaving(hook, seen)) for _ in range(times)]
    finally:
        otel.shutdown()
    return results, seen


HARNESS_ERRORS = sorted({c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.HarnessError)
                         and not issubclass(c, errors.ScenarioInputError | errors.SystemFailure | ReplayAborted)},
                        key=repr)  # those three pass: the scenario's refusal, a failure, the harness's own abort


@pytest.mark.parametrize("error", HARNESS_ERRORS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("method", ["seed", "add_turns", "recall", "forget"])
def test_a_harness_error_the_system_raises_is_its_failure(tmp_path: Path, error: type[Exception], method: str) -> None:
    def hook(name: str, arguments: dict[str, Any]) -> None:
        if name == method:
            raise error("planted by the system")
    [result], _ = _replays(tmp_path, hook)
    assert result.error is None, result.error  # not INCOMPLETE, blamed on the scenario
    assert any(f"the system under test failed: {method}() raised {error.__name__}: planted" in f
               for f in result.failures), result.failures


def test_a_scenario_input_the_system_refuses_is_still_the_scenarios(tmp_path: Path) -> None:
    def hook(name: str, arguments: dict[str, Any]) -> None:
        if name == "recall":
            raise errors.ScenarioInputError("unknown option")
    [result], _ = _replays(tmp_path, hook)
    assert "unknown option" in (result.error or ""), result


def _clear(value: Any) -> None:
    value.clear()


MUTATIONS: dict[str, Callable[[str, dict[str, Any]], None]] = {
    "seed system fields changed": lambda n, a: a["memory"].system.update(importance=99) if n == "seed" else None,
    "seed system fields cleared": lambda n, a: _clear(a["memory"].system) if n == "seed" else None,
    "frozen seed body replaced": lambda n, a: object.__setattr__(a["memory"], "body", "gone") if n == "seed" else None,
    "frozen seed facts replaced": lambda n, a: object.__setattr__(a["memory"], "facts", ()) if n == "seed" else None,
    "tool call input changed": lambda n, a: a["turns"][1].tool_calls[0].input.update(content="x") if n == "add_turns"
    else None,
    "tool call input cleared": lambda n, a: _clear(a["turns"][1].tool_calls[0].input) if n == "add_turns" else None,
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_what_a_system_does_to_its_arguments_stays_in_its_run(tmp_path: Path, mutation: str) -> None:
    _, seen = _replays(tmp_path, MUTATIONS[mutation], times=2)  # two runs of one scenario: two strategies' worth
    assert seen[: len(seen) // 2] == seen[len(seen) // 2:], seen


@pytest.mark.parametrize("how", ["clear", "replace"])
def test_emptying_the_excluded_list_does_not_hide_a_leak(tmp_path: Path, how: str) -> None:
    def hook(name: str, arguments: dict[str, Any]) -> None:
        if name == "recall" and isinstance(excluded := arguments["excluded"], list):
            excluded.clear() if how == "clear" else excluded.__setitem__(slice(None), ["elsewhere.md"])
    [result], _ = _replays(tmp_path, hook)
    assert any("selected already-surfaced memories it was told to exclude" in f for f in result.failures), \
        result.failures


# 4. ------------------------------------------------------------------------------------------------------------------
# Events a system emits (the ``events`` capability) are its objects: ``emit(None)`` printed a Python traceback
# ("telemetry: could not record NoneType" and the stack, through logging); an event whose field raises when read or
# compared made the run INCOMPLETE (exit 2, blamed on the scenario) in ``expect_event``.

EVENT_SCENARIO = """description: "the events a system emits are its own"
tags: [hostile]
clock: 2026-03-02T09:00:00Z
facts:
  terse: {type: feedback, match: ["terse"]}
memories:
  - {path: feedback/terse.md, name: Terse, description: terse answers, type: feedback, body: "Keep replies terse.",
     facts: [terse]}
steps:
  - recall: {query: "terse review please", expect: [terse], expect_event: {name: recall, docs_selected: 1}}
"""


class _Raises:
    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"no {name}")


class _Field:
    def __eq__(self, other: object) -> bool:
        raise RuntimeError("eq")

    def __ne__(self, other: object) -> bool:
        raise RuntimeError("ne")

    __hash__ = None  # type: ignore[assignment]


class _Text(str):
    def __repr__(self) -> str:
        raise RuntimeError("repr")


def _event(**fields: Any) -> Any:
    return type("Event", (), fields)()


EVENTS: dict[str, Callable[[], Any]] = {
    "none": lambda: None, "text": lambda: "recall", "number": lambda: 5, "list": lambda: ["recall"],
    "attribute raises": _Raises, "field compares raising": lambda: _event(name="recall", docs_selected=_Field()),
    "name raises": lambda: _event(name=property(lambda self: 1 / 0), docs_selected=2),
    "field repr raises": lambda: _event(name=_Text("recall"), docs_selected=_Text("2")),
    "name of megabytes": lambda: _event(name="n\n" * 10**6, docs_selected=2),
}


class Emitting(ExampleSystem):
    def __init__(self, events: Any, make: Callable[[], Any]) -> None:
        super().__init__(capabilities=frozenset({Capability.EVENTS}))
        self.sink, self.make = events, make

    def recall(self, query: str, *, now: datetime, limit: int | None, excluded: Sequence[str],
               strategy: str) -> RecallResult:
        self.sink.emit(self.make())
        return super().recall(query, now=now, limit=limit, excluded=excluded, strategy=strategy)


@pytest.mark.parametrize("kind", sorted(EVENTS))
def test_an_odd_event_is_the_systems_failure_in_one_line(tmp_path: Path, kind: str,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "events.yaml"
    path.write_text(EVENT_SCENARIO, encoding="utf-8")
    otel = OTel()
    try:
        result = replay(load_scenario(path), strategy="heuristic", telemetry=otel.telemetry,
                        system_factory=lambda w, c, m, e: Emitting(e, EVENTS[kind]))
    finally:
        otel.shutdown()
    assert result.error is None, result.error  # never INCOMPLETE
    assert result.failures, result  # no event matches
    assert all(f.isprintable() and len(f) < 2_000 for f in result.failures), result.failures
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records]
