"""Expectations beyond status and reason: outcome fields, emitted events, store-wide checks, fault injection."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from harness.errors import SYSTEM_FAILED, SystemFailure, one_line
from harness.scenario import CheckStep, FaultStep, Outcome, RecallStep, TrailingExpect
from harness.system import MemoryRecord
from memory_core.errors import ModelError
from memory_core.model import Model, ModelReply, ModelRequest

Check = Callable[[bool, str], bool]
"""``check(ok, message)``: records a failure unless ok; returns ok."""


@dataclass
class RecordingSink:
    """Forwards every event to telemetry and keeps those of the current step for ``expect_event``."""

    inner: Any
    events: list[Any] = field(default_factory=list)

    def emit(self, event: Any) -> None:
        self.events.append(event)
        self.inner.emit(event)

    def __getattr__(self, name: str) -> Any:  # the telemetry object's other methods (traced, operation…)
        return getattr(self.inner, name)


def applicable(want: Outcome, events: Sequence[Any] | None) -> Outcome:
    """``want`` without its event expectation when the system emits no events (``events`` is None: it lacks the
    ``events`` capability), so an ``expect_event`` is skipped rather than failed."""
    return replace(want, event={}) if want.event and events is None else want


def check_outcome(check: Check, want: Outcome, *, strategy: str, fallback: str | None, touched: Sequence[str],
                  count: int | None, events: Sequence[Any] | None, kind: str, shown: Sequence[str] = (),
                  result: Any = None, params: Sequence[Mapping[str, Any]] = ()) -> bool:
    want = applicable(want, events)
    ok = check_reported(check, want, result)
    if want.model_shown and not check(bool(shown), f"expected a model request showing {want.model_shown[0]!r}, "
                                                   "but the step made no model call"):
        ok = False
    elif want.model_shown:
        for text in want.model_shown:
            ok &= check(any(text in request for request in shown), f"the model was not shown {text!r}")
    if want.model_hidden and not want.model_shown and not check(
            bool(shown), f"expected a model request to check for {want.model_hidden[0]!r}, but the step made no model call"):
        ok = False
    for text in want.model_hidden:
        ok &= check(not any(text in request for request in shown), f"the model was shown {text!r}")
    if want.model_params:
        ok &= check(bool(params), f"expected model requests with {want.model_params}, but the step made no model call")
        for i, request in enumerate(params):
            ok &= _params_match(check, i, request, want.model_params)
    if want.model_params_by:
        ok &= check_params_by(check, want.model_params_by, params)
    if want.strategy is not None:
        ok &= check(strategy == want.strategy, f"expected strategy {want.strategy}, got {strategy}")
    if want.fallback is not None:
        got = fallback or "none"
        ok &= check(got == want.fallback, f"expected fallback {want.fallback}, got {got}")
    if want.touched is not None:
        ok &= check(sorted(set(touched)) == sorted(set(want.touched)),
                    f"expected touched {sorted(want.touched)} (memory kinds written), got {sorted(set(touched))}")
    if want.count is not None and count is not None:
        ok &= check(count == want.count, f"expected {want.count} ({_COUNT_NAME[kind]}), got {count}")
    if want.event and events is not None:
        ok &= check_event(check, want.event, events)
    return ok


def check_trailing(check: Check, want: TrailingExpect | None, runs: Sequence[tuple[str, Any]],
                   events: Sequence[Any] | None) -> bool:
    """``expect_trailing``: the trailing extraction runs (``(session, ExtractResult)``, in order) of a queue group."""
    if want is None:
        return True
    outcome = applicable(want.outcome, events)
    ok = True
    if want.runs is not None:
        ok &= check(len(runs) == want.runs, f"expected {want.runs} trailing run(s), got {len(runs)}"
                                            + (f" (sessions {[s for s, _ in runs]})" if runs else ""))
    if want.sessions is not None:
        ok &= check(tuple(s for s, _ in runs) == want.sessions,
                    f"expected trailing runs for sessions {list(want.sessions)}, got {[s for s, _ in runs]}")
    if not runs:
        return check(want.status is None and not outcome.stated(),
                     "expected a trailing run to report on, none ran") and ok
    last = runs[-1][1]
    if want.status is not None:
        ok &= check(last.status == want.status, f"expected status {want.status}, got {last.status}"
                                                + (f" ({last.error})" if last.error else ""))
    return check_outcome(check, outcome, strategy=last.strategy, fallback=last.fallback_reason,
                         touched=last.touched, count=len(last.written), events=events, kind="extract",
                         result=last) and ok


def _params_match(check: Check, i: int, request: Mapping[str, Any], want: Mapping[str, Any]) -> bool:
    wrong = {k: request.get(k) for k, v in want.items() if not _same(request.get(k), v)}
    return check(not wrong, f"model request {i + 1} ({request.get('purpose')}) has {wrong}, expected "
                            f"{ {k: want[k] for k in wrong} }")


def check_params_by(check: Check, want: Mapping[str, Mapping[str, Any]], params: Sequence[Mapping[str, Any]]) -> bool:
    """``model_params`` per purpose: every request's purpose is one of ``want``'s, carries that purpose's parameters,
    and every purpose of ``want`` is requested at least once."""
    ok = True
    made = [request.get("purpose") for request in params]
    for i, request in enumerate(params):
        purpose = request.get("purpose")
        if isinstance(purpose, str) and purpose in want:
            ok &= _params_match(check, i, request, want[purpose])
        else:
            ok &= check(False, f"model request {i + 1} has purpose {purpose!r}, which model_params does not name "  # noqa: FBT003
                               f"(it names {', '.join(want)})")
    for purpose in want:
        ok &= check(purpose in made, f"expected a model request of purpose {purpose!r}, but the step made "
                                     f"{'none' if not made else 'only ' + ', '.join(sorted(set(map(str, made))))}")
    return ok


def _same(got: Any, want: Any) -> bool:
    """Equal, and a bool only equals a bool (True is not the count 1)."""
    return bool(got == want) and isinstance(got, bool) == isinstance(want, bool)


def check_reported(check: Check, want: Outcome, result: Any) -> bool:
    """``details`` (each name reported with this value; an unreported name fails) and ``warnings`` (each phrase in
    some warning; ``[]``: none) of an operation's result."""
    ok = True
    details = getattr(result, "details", None) or {}
    for name, value in want.details.items():
        if name not in details:
            ok &= check(False, f"expected detail {name} = {value!r}, but the result reports no {name!r} "  # noqa: FBT003
                               f"(reported: {', '.join(sorted(details)) or 'none'})")
        else:
            got = details[name]
            ok &= check(_same(got, value), f"expected detail {name} = {value!r}, got {got!r}")
    if want.warnings is not None:
        said = tuple(getattr(result, "warnings", ()) or ())
        if not want.warnings:
            ok &= check(not said, f"expected no warnings, got {list(said)}")
        for phrase in want.warnings:
            ok &= check(any(phrase.lower() in w.lower() for w in said),
                        f"expected a warning containing {phrase!r}, got {list(said) or 'none'}")
    return ok


_COUNT_NAME = {"extract": "records written", "dream": "entries deduped", "forget": "ids removed", "recall": ""}


def check_event(check: Check, want: dict[str, Any], events: Sequence[Any]) -> bool:
    if not events:
        return check(False, f"expected an event {want}, none was emitted")  # noqa: FBT003
    last = events[-1]
    try:  # the system's object: a field that raises (or compares raising) is its failure, not the scenario's
        wrong = {k: getattr(last, k, "<absent>") for k, v in want.items() if getattr(last, k, "<absent>") != v}
        wrong = {k: v if type(v) in (int, float, bool) or (type(v) is str and len(v) < 200 and v.isprintable())
                 else one_line(repr(v))[:200] for k, v in wrong.items()}  # shown plain, on one short line
        name = getattr(last, "name", None) if wrong else None
        name = name if type(name) is str else type(last).__name__
    except Exception as exc:
        from harness.replay._observed import describe
        raise SystemFailure(f"{SYSTEM_FAILED}: the event it emitted could not be read: {describe(exc)}") from None
    return check(not wrong, f"event {one_line(name)[:200]} has {wrong}, expected {({k: want[k] for k in wrong})}")


def check_store(check: Check, step: CheckStep, records: Sequence[MemoryRecord], *, files: bool, index: str | None,
                lock_held: Callable[[], bool | None] | None) -> None:
    ids = {r.id for r in records}
    if step.only_files is not None and files:
        extra, missing = sorted(ids - set(step.only_files)), sorted(set(step.only_files) - ids)
        check(not extra and not missing, f"store holds exactly {sorted(step.only_files)}? unexpected {extra}, "
                                         f"missing {missing}")
    if step.index_order and index is not None:
        positions = [index.find(f"]({rid})") for rid in step.index_order]
        absent = [rid for rid, p in zip(step.index_order, positions, strict=True) if p < 0]
        check(not absent and positions == sorted(positions),
              f"index lines not in the order {list(step.index_order)}" + (f" (absent: {absent})" if absent else ""))
    by_id = {r.id: r for r in records}
    for want in step.entries:
        record = by_id.get(want.record)
        if record is None:
            check(False, f"entry check: no record {want.record}")  # noqa: FBT003
            continue
        candidates = record.entries if record.entries is not None else ()
        match = [e for e in candidates if _has(e.summary, want.summary) and _has(e.why, want.why)
                 and _has(e.how_to_apply, want.how_to_apply)]
        check(bool(match), f"no entry of {want.record} with summary~{want.summary!r} why~{want.why!r} "
                           f"how_to_apply~{want.how_to_apply!r}; entries: {[e.summary for e in candidates]}")
    if step.lock_held is not None and lock_held is not None:
        held = lock_held()
        check(held is step.lock_held, f"lock held is {held}, expected {step.lock_held}" if held is not None else
              "the system declares capability locks but has no lock_held() to check it with")


def _has(text: str, part: str) -> bool:
    return not part or part.lower() in (text or "").lower()


_TRANSPORT_ERRORS = {"timeout": "Timeout", "connection": "APIConnectionError", "rate_limit": "RateLimitError",
                     "server_error": "InternalServerError"}


@dataclass
class FaultingModel:
    """Delivers injected model faults at the transport: the call goes through the real litellm adapter with a
    mocked transport failure, so the adapter's own error mapping (timeout, provider, invalid JSON) runs."""

    inner: Model
    pending: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.inner.name

    def inject(self, fault: FaultStep) -> None:
        assert fault.model is not None
        self.pending += [fault.model] * fault.times

    def query(self, request: ModelRequest) -> ModelReply:
        if not self.pending:
            return self.inner.query(request)
        kind = self.pending.pop(0)
        from memory_core.litellm_model import LiteLLMModel

        adapter = LiteLLMModel("openai/memharness-fault-injection", api_key="sk-fault")
        if kind == "malformed":
            return adapter.query(request, mock_response=_mock("{not json: this is a malformed body"))
        from memory_core.litellm_model import _litellm

        litellm = _litellm()  # the transport's own exception types; imported as the adapter does (offline cost map)

        error_type = getattr(litellm, _TRANSPORT_ERRORS[kind])
        error = error_type(message=f"injected {kind}", llm_provider="openai", model="memharness-fault-injection")
        try:
            return adapter.query(request, mock_response=error)
        except ModelError:
            raise
        except Exception as exc:  # the adapter let a transport error through: report it as the adapter would not
            raise ModelError(f"unmapped transport error {type(exc).__name__}: {exc}", reason="unmapped") from exc


def _mock(text: str) -> dict[str, Any]:
    return {"id": "fault", "object": "chat.completion", "model": "memharness-fault-injection",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def glob_match(pattern: str, key: str) -> bool:
    return fnmatch.fnmatchcase(key, pattern)


def recall_expectations(check: Check, step: RecallStep, strategy: str, k: int, selected: tuple[str, ...], prompt: str,
                        covers: list[frozenset[str]], found: list[str], metrics: Mapping[str, float | None],
                        excluded: list[str], quality: Check | None = None) -> bool:
    """What a recall step states, plus the contract every system's recall must keep (at most k, no duplicates,
    nothing excluded). ``quality`` judges what grades the selection (thresholds, exact selections, forbidden facts):
    ``check`` itself unless a real model chose (``_quality``)."""
    judge = quality or check
    results = []
    missed = [f for f in step.expect if f not in found]
    why = f" (missed: {', '.join(missed)}; selected: {', '.join(selected) or 'nothing'})" if missed else \
        f" (selected: {', '.join(selected) or 'nothing'})"
    for key, minimum in step.requirements(strategy).items():
        value = metrics.get(key)
        results.append(judge(value is not None and value >= minimum,
                             f"{key} {value} < required {minimum} for query {step.query!r}{why}"))
    for text in step.prompt_contains:
        results.append(check(text in prompt, f"prompt block does not contain {text!r}"))
    for text in step.prompt_excludes:
        results.append(check(text not in prompt, f"prompt block contains {text!r}"))
    # contract checks that hold for every memory system, stated or not (spec §7.1-§7.3)
    results.append(check(len(selected) <= k, f"selected {len(selected)} memories, more than k={k}"))
    results.append(check(len(set(selected)) == len(selected),
                              f"selected the same memory twice: {list(selected)}"))
    leaked = sorted(set(selected) & set(excluded))
    results.append(check(not leaked,
                              f"selected already-surfaced memories it was told to exclude: {leaked}"))
    forbidden = sorted(set().union(*covers) & set(step.forbid)) if covers else []
    results.append(judge(not forbidden, f"recalled forbidden facts: {', '.join(forbidden)}"))
    if step.expect_covered is not None:
        results.append(judge(sorted(set(found)) == sorted(step.expect_covered),
                                  f"selection covers {sorted(found)}, expected exactly {sorted(step.expect_covered)}"))
    if step.expect_selected is not None:
        results.append(judge(tuple(selected) == step.expect_selected,
                                  f"selected {list(selected)}, expected exactly {list(step.expect_selected)}"))
    return all(results)

