"""Every check kind of the scenario JSON Schema, proved three ways (issue 31: no check can pass by absence).

For each expectation a step can state (recall, forget, dream, a session's ``expect_extract`` / ``expect_trailing``)
and each key of a ``check`` step, a shipped scenario that states it is replayed three times:
- against the conforming system (the reference, or the SQLite system for its own kinds): **passed**;
- against the same system without the capability the kind needs (if it needs one): the step is **skipped** with a
  reason naming the capability, and nothing fails;
- against the same system lying about exactly what the kind reads (a result field, the events, the model request,
  the records, the index, the lock, the stray files, a system check): **failed**, at a step that states the kind.
A kind in the schema without a row here fails ``test_every_schema_check_kind_has_a_row``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.replay import (
    Capability,
    MemoryRecord,
    ModelSpec,
    RecordEntry,
    RunConfig,
    Worker,
    resolve_set,
    step_needs,
)
from harness.scenario import FaultStep, Scenario, load_all
from harness.system import reference_factory
from harness.systems.sqlite import factory_for as sqlite_factory_for
from memory_core.events import NullSink
from memory_core.model import Message, ModelRequest
from tests.harness.conftest import SCENARIOS

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "harness" / "scenario" / "scenario.schema.json").read_text())


def schema_kinds() -> set[str]:
    """``step.key`` for every check or expectation the schema allows."""
    steps = SCHEMA["properties"]["steps"]["items"]["oneOf"]
    by_step = {next(iter(s["properties"])): s["properties"] for s in steps}
    session = by_step["session"] if "session" in by_step else steps[0]["properties"]
    kinds = {f"session.{sub}.{k}" for sub in ("expect_extract", "expect_trailing")
             for k in session[sub]["properties"]}
    recall = steps[3]["properties"]["recall"]["properties"]
    kinds |= {f"recall.{k}" for k in recall if k.startswith("expect") or k in ("require", "forbid", "prompt_contains",
                                                                            "prompt_excludes")}
    kinds |= {f"forget.{k}" for k in steps[4]["properties"]["forget"]["properties"] if k.startswith("expect")}
    kinds |= {f"dream.{k}" for k in steps[2]["properties"]["dream"]["oneOf"][1]["properties"] if k.startswith("expect")}
    kinds |= {f"check.{k}" for k in steps[5]["properties"]["check"]["properties"]}
    return kinds


# ---- lies -----------------------------------------------------------------------------------------------------

Lie = Callable[[Any, Scenario], Any]
"""``lie(system, scenario)`` → a system that answers like ``system`` except for one thing."""


class _Proxy:
    """Delegates everything to ``inner`` except the overridden attributes."""

    def __init__(self, inner: Any, **overrides: Any) -> None:
        self.__dict__["_inner"] = inner
        self.__dict__["_overrides"] = overrides

    def __getattr__(self, name: str) -> Any:
        if name in self._overrides:
            return self._overrides[name]
        return getattr(self._inner, name)


def _other(value: Any, field: str) -> Any:
    """A plausible wrong value for a result field."""
    choices = {"status": ("completed", "skipped", "updated", "noop", "failed"),
               "strategy": ("heuristic", "model", "none"),
               "reason": (None, "queued", "locked", "min_hours", "memory_tool"),
               "fallback_reason": (None, "timeout", "schema")}
    if field in choices:
        return next(c for c in choices[field] if c != value)
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, tuple):
        return value[1:] if value else ("lie/nothing.md",)
    if isinstance(value, dict):
        return {k: f"lie {v!r}" for k, v in value.items()} or {"lie": 1}
    return "lie"


def result_lie(method: str, field: str) -> Lie:
    """``method``'s result with ``field`` wrong."""
    def lie(system: Any, scenario: Scenario) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            result = getattr(system, method)(*args, **kwargs)
            return dataclasses.replace(result, **{field: _other(getattr(result, field), field)})
        return _Proxy(system, **{method: call})
    return lie


def trailing_lie(field: str) -> Lie:
    """Every trailing run ``release_extractions`` reports with ``field`` wrong (``runs``: one run fewer;
    ``sessions``: another session)."""
    def lie(system: Any, scenario: Scenario) -> Any:
        def release(*args: Any, **kwargs: Any) -> Any:
            runs = system.release_extractions(*args, **kwargs)
            if field == "runs":
                return runs[1:] if runs else [("lie", runs and runs[0][1])]
            if field == "sessions":
                return [(f"lie-{sid}", r) for sid, r in runs]
            return [(sid, dataclasses.replace(r, **{field: _other(getattr(r, field), field)})) for sid, r in runs]
        return _Proxy(system, release_extractions=release)
    return lie


def forget_nothing(system: Any, scenario: Scenario) -> Any:
    """Reports the removals but removes nothing."""
    def forget(*args: Any, **kwargs: Any) -> Any:
        return dataclasses.replace(system.forget(*args, **kwargs), removed=())
    return _Proxy(system, forget=forget)


def _remember_everything(docs: list[MemoryRecord], scenario: Scenario) -> list[MemoryRecord]:
    phrases = " ".join(p for fact in scenario.facts.values() for p in fact.match)
    extra = [dataclasses.replace(d, id=f"{d.id}.lie", text=f"{d.text} {phrases}",
                                 entries=(*(d.entries or ()), RecordEntry(phrases))) for d in docs]
    absent = [MemoryRecord(id=p, type="user", title="lie", text=phrases)
              for step in scenario.steps for p in getattr(step, "files_absent", ())]
    return [*docs, *extra, *absent, MemoryRecord(id="lie/extra.md", type="user", title="lie", text=phrases)]


def docs_lie(kind: str) -> Lie:
    """``documents()`` forgets everything (``empty``) or remembers everything twice, plus files that should not be."""
    def lie(system: Any, scenario: Scenario) -> Any:
        def documents() -> list[MemoryRecord]:
            docs = system.documents()
            return [] if kind == "empty" else _remember_everything(docs, scenario)
        return _Proxy(system, documents=documents)
    return lie


def index_lie(system: Any, scenario: Scenario) -> Any:
    """An index of 300 long lines that says nothing the real one says (and loads as nothing)."""
    return _Proxy(system, index_text=lambda: "\n".join(f"- [lie](lie/{n}.md) — {'x' * 200}" for n in range(300)),
                  loaded_index=lambda: "")


def lock_lie(system: Any, scenario: Scenario) -> Any:
    return _Proxy(system, lock_held=lambda *a, **k: not system.lock_held(*a, **k))


def stray_lie(system: Any, scenario: Scenario) -> Any:
    return _Proxy(system, stray_files=lambda: ["../outside.txt"])


def system_check_lie(system: Any, scenario: Scenario) -> Any:
    return _Proxy(system, system_check=lambda name, expected: f"{name}: lie (expected {expected!r})")


@dataclass
class _BentModel:
    """Passes each request on with the part a ``expect_model_*`` check reads changed."""

    inner: Any
    how: str
    scenario: Scenario

    @property
    def name(self) -> str:
        return str(self.inner.name)

    def query(self, request: ModelRequest) -> Any:
        if self.how == "params":
            request = dataclasses.replace(request, timeout_s=request.timeout_s + 1, temperature=request.temperature + 0.5)
        elif self.how == "shown":
            request = dataclasses.replace(request, messages=tuple(Message(m.role, "") for m in request.messages))
        else:  # hidden: show what the scenario says must stay hidden
            hidden = [t for step in self.scenario.steps for t in _hidden_texts(step)]
            extra = Message("user", "\n".join(hidden))
            request = dataclasses.replace(request, messages=(*request.messages, extra))
        return self.inner.query(request)


def _hidden_texts(step: Any) -> list[str]:
    out = list(getattr(step, "expect_model_hidden", ()) or ())
    outcome = getattr(step, "outcome", None)
    return out + list(getattr(outcome, "model_hidden", ()) or ())


# ---- rows ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    lie: Lie | str
    """A system lie, or ``events`` / ``model:params|shown|hidden`` (what the system is given is bent)."""
    system: str = "reference"


def _op_field_rows(step: str, method: str, mapping: dict[str, str]) -> dict[str, Row]:
    return {f"{step}.{key}": Row(result_lie(method, field)) for key, field in mapping.items()}


ROWS: dict[str, Row] = {
    "recall.expect": Row(lambda s, sc: _Proxy(s, recall=lambda *a, **k: dataclasses.replace(s.recall(*a, **k),
                                                                                         selected=()))),
    **_op_field_rows("recall", "recall", {"require": "selected", "expect_selected": "selected",
                                          "expect_covered": "selected", "expect_strategy": "strategy",
                                          "expect_fallback": "fallback_reason", "prompt_contains": "prompt"}),
    "recall.forbid": Row(lambda s, sc: _Proxy(s, recall=lambda *a, **k: dataclasses.replace(
        s.recall(*a, **k), selected=tuple(d.id for d in s.documents())[: k.get("limit") or 5]))),
    "recall.prompt_excludes": Row(lambda s, sc: _Proxy(s, recall=lambda *a, **k: dataclasses.replace(
        s.recall(*a, **k), prompt="\n".join(f"{d.title} {d.description} {d.text}" for d in s.documents()) + "\n"
        + "\n".join(t for st in sc.steps for t in getattr(st, "prompt_excludes", ()))))),
    "recall.expect_details": Row(result_lie("recall", "details"), system="sqlite"),
    **_op_field_rows("forget", "forget", {"expect_removed_count": "removed", "expect_removed_ids": "removed",
                                          "expect_strategy": "strategy", "expect_fallback": "fallback_reason",
                                          "expect_touched": "touched", "expect_warnings": "warnings",
                                          "expect_details": "details"}),
    "forget.expect_removed": Row(forget_nothing),
    **_op_field_rows("dream", "dream", {"expect_status": "status", "expect_reason": "reason",
                                        "expect_strategy": "strategy", "expect_fallback": "fallback_reason",
                                        "expect_touched": "touched", "expect_deduped": "deduped",
                                        "expect_warnings": "warnings"}),
    "dream.expect_details": Row(result_lie("dream", "details"), system="sqlite"),
    **{f"session.expect_extract.{k}": Row(result_lie("extract", f))
       for k, f in {"status": "status", "reason": "reason", "strategy": "strategy", "fallback": "fallback_reason",
                    "touched": "touched", "written": "written", "warnings": "warnings", "details": "details"}.items()},
    **{f"session.expect_trailing.{k}": Row(trailing_lie(f))
       for k, f in {"runs": "runs", "sessions": "sessions", "status": "status", "strategy": "strategy",
                    "fallback": "fallback_reason", "touched": "touched", "written": "written"}.items()},
    **{f"{step}.{key}": Row("events") for step, key in (("recall", "expect_event"), ("forget", "expect_event"),
                                                         ("dream", "expect_event"), ("session", "expect_extract.event"),
                                                         ("session", "expect_trailing.event"))},
    **{f"{step}.{prefix}model_{how}": Row(f"model:{how}") for step, prefix in (
        ("recall", "expect_"), ("forget", "expect_"), ("dream", "expect_"), ("session", "expect_extract."))
       for how in ("shown", "hidden", "params")},
    "check.facts_present": Row(docs_lie("empty")),
    "check.files_present": Row(docs_lie("empty")),
    "check.facts_absent": Row(docs_lie("full")),
    "check.files_absent": Row(docs_lie("full")),
    "check.only_files": Row(docs_lie("full")),
    "check.entries": Row(docs_lie("full")),
    "check.max_entries_per_fact": Row(docs_lie("full")),
    **{f"check.{k}": Row(index_lie) for k in ("index_contains", "index_lines", "index_order", "index_within_limits",
                                              "loaded_index_contains")},
    "check.lock_held": Row(lock_lie),
    "check.no_stray_files": Row(stray_lie),
    "check.system": Row(system_check_lie),
}


# ---- scenarios that state each kind ----------------------------------------------------------------------------


def _states(scenario: Scenario, kind: str) -> list[int]:
    """Indexes of the steps of ``scenario`` that state check kind ``kind`` (from its YAML, as written)."""
    import yaml

    raw = yaml.safe_load(scenario.path.read_text(encoding="utf-8"))
    step_kind, _, key = kind.partition(".")
    out = []
    for i, step in enumerate(raw.get("steps") or ()):
        body = step.get(step_kind) if isinstance(step, dict) else None
        if step_kind == "session" and isinstance(step, dict) and "session" in step:
            sub, _, name = key.partition(".")
            if isinstance(step.get(sub), dict) and name in step[sub]:
                out.append(i)
        elif isinstance(body, dict) and key in body and (kind != "recall.expect" or "require" in body):
            out.append(i)  # `expect` alone is the gold of the metrics; with `require` it is a check
    return out


@pytest.fixture(scope="module")
def suite() -> list[Scenario]:
    return load_all([SCENARIOS])


@pytest.fixture(scope="module")
def worker() -> Iterator[Worker]:
    w = Worker(RunConfig(None, ModelSpec(resolve_set(SCENARIOS / "cassettes"))))
    yield w
    w.shutdown()


def _factory(row: Row, scenario: Scenario, caps_less: Capability | None = None, lying: bool = False) -> Any:
    base = reference_factory if row.system == "reference" else sqlite_factory_for("")

    def factory(workdir: Path, clock: Any, model: Any, events: Any) -> Any:
        if lying and row.lie == "events":
            events = NullSink()
        if lying and isinstance(row.lie, str) and row.lie.startswith("model:") and model is not None:
            model = _BentModel(model, row.lie.split(":", 1)[1], scenario)
        system = base(workdir, clock, model, events)
        if lying and callable(row.lie):
            system = row.lie(system, scenario)
        if caps_less is not None:
            system = _Proxy(system, capabilities=frozenset(system.capabilities) - {caps_less})
        return system
    return factory


def _replay(worker: Worker, scenario: Scenario, factory: Any) -> Any:
    worker.factory = factory
    strategy = (scenario.strategies or ("heuristic",))[0]
    return worker.run_one(scenario, strategy)


def _candidates(suite: list[Scenario], kind: str, system: str) -> list[tuple[Scenario, list[int]]]:
    design = "qwen-file" if system == "reference" else "s1-sqlite"
    ok = [s for s in suite if (s.design == design or (not s.design and (not s.systems or system in s.systems)))
          and (not s.systems or system in s.systems)
          and not any(isinstance(step, FaultStep) and step.model is not None for step in s.steps)]  # no litellm here
    return [(s, steps) for s in ok if (steps := _states(s, kind))]


def test_every_schema_check_kind_has_a_row() -> None:
    assert schema_kinds() - set(ROWS) == set(), "a check kind without a row: add one (conforming, lacking, lying)"
    assert set(ROWS) - schema_kinds() == set(), "a row for a kind the schema no longer has"


@pytest.mark.parametrize("kind", sorted(ROWS))
def test_the_check_kind_passes_conforming_skips_lacking_and_fails_lying(kind: str, suite: list[Scenario],
                                                                        worker: Worker) -> None:
    row = ROWS[kind]
    found = _candidates(suite, kind, row.system)
    assert found, f"no shipped {row.system} scenario states {kind}: write one (a kind nothing exercises is untested)"
    tried = []
    for scenario, steps in found[:8]:
        honest = _replay(worker, scenario, _factory(row, scenario))
        needed = {c for i in steps for c, part in step_needs(scenario.steps[i])}
        for capability in needed if honest.status == "passed" else ():  # a lacking capability never passes a check
            lacking = _replay(worker, scenario, _factory(row, scenario, caps_less=capability))
            assert lacking.status in ("passed", "skipped"), f"{kind} without {capability}: {lacking.failures[:3]}"
            skipped = [p.skipped for p in lacking.probes if p.skipped] + ([lacking.skipped] if lacking.skipped else [])
            assert any(capability.value in (why or "") for why in skipped), \
                f"{kind} without {capability.value}: nothing says it was skipped for it ({skipped})"
        lying = _replay(worker, scenario, _factory(row, scenario, lying=True)) if honest.status == "passed" else None
        tried.append(f"{scenario.id}: honest {honest.status}" + (f", lying {lying.status}" if lying else ""))
        if lying is not None and lying.status == "failed" \
                and any(f.startswith(f"step {i} ") for f in lying.failures for i in steps):
            return  # the lie was caught at a step that states the kind
    pytest.fail(f"{kind}: no scenario shows a conforming pass and a caught lie: {tried}")
