"""Dream: gates in spec order (§6.2), the lock (§6.3), mechanical dedupe (§6.7) or model consolidation."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Final

from memory_core.clock import monotonic_ms
from memory_core.errors import ModelError, ReplayAborted, describe_error
from memory_core.events import DreamEvent, EventSink, NullSink
from memory_core.files.dedupe import DedupePlan, combine_entries, plan_dedupe
from memory_core.files.entries import Entry, render_entries
from memory_core.files.forget import ForgetCandidate, forget_candidates
from memory_core.files.formats import iso_ms, parse_iso_ms, to_ms
from memory_core.files.index import mark_index_dirty, rebuild_index, repair_stale_index
from memory_core.files.lock import PidAlive, acquire_lock, lock_held, pid_alive, release_lock
from memory_core.files.patches import scrub
from memory_core.files.scan import DocCache, scan
from memory_core.files.sessions import SessionSource
from memory_core.files.state import read_meta, scaffold, update_meta, update_meta_best_effort
from memory_core.files.store import Store
from memory_core.files.topic import MEMORY_TYPES, TopicDoc, replace_body
from memory_core.model import Message, Model, ModelRequest, checked_data, model_or_heuristic
from memory_core.prompts import render_prompt

DEFAULT_MIN_HOURS: Final = 24.0
DEFAULT_MIN_SESSIONS: Final = 5
SESSION_SCAN_INTERVAL_MS: Final = 10 * 60 * 1000
DREAM_PURPOSE: Final = "auto-memory-dream"
DREAM_TIMEOUT_S: Final = 60.0
DREAM_SCHEMA: Final = {
    "type": "object",
    "properties": {"operations": {"type": "array", "items": {"type": "object"}}},
    "required": ["operations"],
}


@dataclass(frozen=True, slots=True)
class DreamOutcome:
    """What a dream request did."""

    status: str
    """``updated`` | ``noop`` | ``skipped`` | ``failed``."""
    skipped_reason: str | None = None
    """``disabled | same_session | min_hours | scan_throttled | min_sessions | locked | running``."""
    deduped_entries: int = 0
    touched_topics: tuple[str, ...] = ()
    session_count: int | None = None
    strategy: str = "heuristic"
    fallback_reason: str | None = None
    error: str | None = None
    """Why the dream failed (``failed``): one line naming the exception and, where known, the file."""
    warnings: tuple[str, ...] = ()
    """Files ignored or repaired on the way (corrupt state file, unsafe topic file, stale index)."""


def _text(op: Mapping[str, Any], key: str) -> str | None:
    value = op.get(key)
    if value is None or isinstance(value, str):
        return value or None
    raise ModelError(f"dream operation field {key!r} must be a string: {value!r}"[:200], reason="schema")


def plan_by_model(docs: Sequence[TopicDoc], *, model: Model, timeout_s: float) -> DedupePlan:
    """Ask the model for merge/delete/rewrite operations by entry id; validate and turn them into a plan.

    Raises ``ModelError`` on unknown ids, an id used twice, or a malformed operation. Entries the plan does not
    name are kept as they are; every write targets a doc the scan found, so nothing lands outside the root.
    """
    candidates = forget_candidates(docs)
    prompt = render_prompt("dream_user", entries=candidates)
    reply = model.query(
        ModelRequest(DREAM_PURPOSE, (Message("user", prompt.text),), DREAM_SCHEMA, timeout_s, prompt.version)
    )
    by_id = {c.id: c for c in candidates}
    entries: dict[str, Entry | None] = {c.id: Entry(c.summary, c.why, c.how_to_apply) for c in candidates}
    used: set[str] = set()

    def claim(cid: Any) -> ForgetCandidate:
        if not isinstance(cid, str) or cid not in by_id:
            raise ModelError(f"Unknown entry id: {cid!r}", reason="unknown_id")
        if cid in used:
            raise ModelError(f"Entry id used by two operations: {cid}", reason="schema")
        used.add(cid)
        return by_id[cid]

    removed = 0
    for op in checked_data(reply, DREAM_SCHEMA)["operations"]:
        kind = op.get("op") if isinstance(op, Mapping) else None
        if kind == "delete":
            entries[claim(op.get("id")).id] = None
            removed += 1
        elif kind == "rewrite":
            c = claim(op.get("id"))
            old = entries[c.id] or Entry(c.summary)
            entries[c.id] = Entry(scrub(_text(op, "summary") or old.summary), _text(op, "why") or old.why,
                                  _text(op, "how_to_apply") or old.how_to_apply)
        elif kind == "merge":
            ids, into = op.get("ids"), op.get("into")
            if not isinstance(ids, list) or len(ids) < 2 or into not in ids:
                raise ModelError(f"merge needs ids (≥ 2) and into among them: {op!r}", reason="schema")
            merged: Entry | None = None
            for c in [claim(i) for i in ids]:
                current = entries[c.id]
                merged = current if merged is None else combine_entries(merged, current or Entry(""))
                entries[c.id] = None
            assert merged is not None
            summary = _text(op, "summary")
            entries[into] = Entry(scrub(summary), merged.why, merged.how_to_apply) if summary else merged
            removed += len(ids) - 1
        else:
            raise ModelError(f"unknown dream operation: {op!r}", reason="schema")
    bodies: dict[str, str] = {}
    deletes: list[str] = []
    types = {d.relative_path: d.type for d in docs}
    ids_by_path: dict[str, list[str]] = {}
    for c in candidates:
        ids_by_path.setdefault(c.relative_path, []).append(c.id)
    for doc in docs:
        ids = ids_by_path.get(doc.relative_path, [])
        kept = [e for i in ids if (e := entries[i]) is not None]
        if ids and not kept:
            deletes.append(doc.relative_path)
        elif render_entries(kept) != doc.body and ids:
            bodies[doc.relative_path] = render_entries(kept)
    touched = {types[p] for p in [*bodies, *deletes]}
    return DedupePlan(bodies, tuple(deletes), removed, tuple(t for t in MEMORY_TYPES if t in touched))


def apply_plan(store: Store, plan: DedupePlan, docs: Sequence[TopicDoc]) -> tuple[str, ...]:
    """Write new bodies (frontmatter kept) and delete merged duplicates; returns the types actually written."""
    types = {d.relative_path: d.type for d in docs}
    written: set[str] = set()
    if plan.bodies or plan.deletes:
        mark_index_dirty(store)
    for path, body in plan.bodies.items():
        text = replace_body(store.read(path), body)
        if text is not None:
            store.write(path, text)
            written.add(types[path])
    for path in plan.deletes:
        if store.delete(path):
            written.add(types[path])
    # fix: spec §12 — touched topics come only from files actually written
    return tuple(t for t in MEMORY_TYPES if t in written)


def run_dream(
    store: Store, *, now: datetime, model: Model | None = None, timeout_s: float = DREAM_TIMEOUT_S,
    cache: DocCache | None = None,
) -> DreamOutcome:
    """Consolidate once: model plan when a model is given (heuristic on failure), else mechanical dedupe.

    Never raises for storage, state-file, path or model trouble: such a run returns ``failed`` with ``error``.
    Topic files the scan refused (a symlink leaving the root, a FIFO, an oversized file) are never read, so their
    text cannot be merged into a file inside the root; they are listed in ``warnings``.
    """
    warnings: list[str] = []
    try:
        outcome = _dream(store, now=now, model=model, timeout_s=timeout_s, cache=cache, warnings=warnings)
    except ReplayAborted:  # a harness without a recorded answer: the run must say so
        raise
    except Exception as exc:  # documented: a failed result, never an exception
        outcome = DreamOutcome("failed", error=describe_error(exc))
    return replace(outcome, warnings=tuple(warnings)) if warnings else outcome


def _dream(
    store: Store, *, now: datetime, model: Model | None, timeout_s: float, cache: DocCache | None,
    warnings: list[str],
) -> DreamOutcome:
    scaffold(store, now=now)
    if repair_stale_index(store, cache=cache):
        warnings.append("MEMORY.md: stale after an interrupted operation; rebuilt")
    result = scan(store, cache=cache)
    warnings.extend(result.warnings)
    docs = result.docs
    plan, used_model, fallback = model_or_heuristic(
        (lambda: plan_by_model(docs, model=model, timeout_s=timeout_s)) if model is not None else None,
        lambda: plan_dedupe(docs),
    )
    strategy = "model" if used_model else "heuristic"
    touched = apply_plan(store, plan, docs)
    status = "updated" if touched else "noop"
    if touched:
        update_meta_best_effort(store, now=now, warn=warnings.append, lastDreamAt=iso_ms(now))
    if touched or plan.bodies or plan.deletes:
        rebuild_index(store, cache=cache)
    update_meta_best_effort(
        store, now=now, warn=warnings.append, lastDreamAt=iso_ms(now), lastDreamTouchedTopics=list(touched),
        lastDreamStatus=status,
    )
    return DreamOutcome(status, None, plan.deduped_entries, touched, None, strategy, fallback)


@dataclass
class DreamScheduler:
    """The gates of spec §6.2 in exact order, the lock, the run, and one event per request."""

    store: Store
    sessions: SessionSource
    enabled: bool = True
    # default factories read the module constants at construction, so a mutation test can change the gates
    min_hours: float = field(default_factory=lambda: DEFAULT_MIN_HOURS)
    min_sessions: int = field(default_factory=lambda: DEFAULT_MIN_SESSIONS)
    model: Model | None = None
    events: EventSink = field(default_factory=NullSink)
    cache: DocCache | None = None
    timeout_s: float = DREAM_TIMEOUT_S
    alive: PidAlive = pid_alive
    pid: int = field(default_factory=os.getpid)
    last_scan_ms: float = 0.0
    running: bool = False
    _warnings: list[str] = field(default_factory=list, repr=False)

    def gate(self, *, now: datetime, session_id: str) -> tuple[str | None, int | None]:
        """The first gate that skips (with the session count when it was taken), or ``(None, count)``."""
        if not self.enabled:
            return "disabled", None
        scaffold(self.store, now=now)
        meta = read_meta(self.store, warn=self._warnings.append) or {}
        if meta.get("lastDreamSessionId") == session_id:
            return "same_session", None
        last = parse_iso_ms(meta.get("lastDreamAt"))
        now_ms = to_ms(now)
        if last is not None and (now_ms - last) / 3.6e6 < self.min_hours:
            return "min_hours", None
        if now_ms - self.last_scan_ms < SESSION_SCAN_INTERVAL_MS:
            return "scan_throttled", None
        count = len(self.sessions.sessions_since(last or 0.0, exclude=session_id))
        self.last_scan_ms = now_ms
        if count < self.min_sessions:
            return "min_sessions", count
        if lock_held(self.store, now=now, alive=self.alive):
            return "locked", count
        if self.running:
            return "running", count
        return None, count

    def schedule(self, *, now: datetime, session_id: str, force: bool = False) -> DreamOutcome:
        """Gate (unless ``force``), lock, dream, record metadata; never raises (garbage state files, locks, models
        and paths give ``failed`` or ``skipped`` with a reason, and a warning naming any file it ignored)."""
        t0 = monotonic_ms()
        self._warnings = []
        try:
            reason, count = (None, None) if force else self.gate(now=now, session_id=session_id)
            if reason is None and (force and lock_held(self.store, now=now, alive=self.alive)):
                reason = "locked"
            outcome = DreamOutcome("skipped", reason, session_count=count) if reason else self._run(now, session_id)
        except ReplayAborted:  # a harness without a recorded answer: the run must say so
            raise
        except Exception as exc:  # documented never to raise
            # fix: spec §12 — a failed dream still emits its event, with status ``failed``
            outcome = DreamOutcome("failed", error=describe_error(exc))
        warnings = tuple(dict.fromkeys([*self._warnings, *outcome.warnings]))
        outcome = replace(outcome, warnings=warnings)
        self.events.emit(
            DreamEvent(
                session_id=session_id, status=outcome.status, duration_ms=monotonic_ms() - t0,
                strategy=outcome.strategy, skipped_reason=outcome.skipped_reason,
                deduped_entries=outcome.deduped_entries, touched_topics=outcome.touched_topics,
                fallback_reason=outcome.fallback_reason, error=outcome.error, warnings=outcome.warnings,
            )
        )
        return outcome

    def _run(self, now: datetime, session_id: str) -> DreamOutcome:
        if not acquire_lock(self.store, pid=self.pid, now=now, alive=self.alive):
            return DreamOutcome("skipped", "locked")
        self.running = True
        try:
            outcome = run_dream(self.store, now=now, model=self.model, timeout_s=self.timeout_s, cache=self.cache)
            if outcome.status != "failed":
                update_meta(self.store, now=now, warn=self._warnings.append, lastDreamAt=iso_ms(now),
                            lastDreamSessionId=session_id)
            return outcome
        finally:
            self.running = False
            release_lock(self.store, pid=self.pid)
