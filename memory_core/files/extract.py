"""Extraction: slice by cursor, plan patches (heuristic or model), apply them, and the scheduler (spec §5).

fix: spec §12 — the cursor uses one index space (full-history offsets), and the memory_tool skip looks only at
the unprocessed slice, so one memory write by the main agent no longer silences extraction for the session.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Final

from memory_core.clock import monotonic_ms
from memory_core.errors import ReplayAborted, describe_error
from memory_core.events import EventSink, ExtractEvent, NullSink
from memory_core.files.entries import Entry, merge_entry, parse_entries, render_entries
from memory_core.files.formats import iso_ms, to_ms
from memory_core.files.history import ChatMessage, TranscriptLine, transcript, writes_memory
from memory_core.files.index import mark_index_dirty, rebuild_index, repair_stale_index
from memory_core.files.patches import Patch, dedupe_patches, extract_heuristic
from memory_core.files.recall import build_manifest
from memory_core.files.scan import DocCache, scan
from memory_core.files.state import read_cursor, scaffold, update_meta, write_cursor
from memory_core.files.store import Store
from memory_core.files.topic import MEMORY_TYPES, TopicDoc, render_topic, replace_body
from memory_core.model import Message, Model, ModelRequest, checked_data, model_or_heuristic
from memory_core.prompts import render_prompt

EXTRACT_PURPOSE: Final = "auto-memory-extract"
EXTRACT_TIMEOUT_S: Final = 30.0
_SLUG_RUN: Final = re.compile(r"[^a-z0-9]+")
EXTRACT_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "patches": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "topic": {"type": "string", "enum": list(MEMORY_TYPES)},
                    "summary": {"type": "string"},
                    "why": {"type": "string"},
                    "how_to_apply": {"type": "string"},
                },
                "required": ["topic", "summary"],
            },
        }
    },
    "required": ["patches"],
}


@dataclass(frozen=True, slots=True)
class ExtractRequest:
    """One extraction request: the session's whole history so far."""

    session_id: str
    history: tuple[ChatMessage, ...]


@dataclass(frozen=True, slots=True)
class ExtractOutcome:
    """What an extraction did."""

    status: str
    """``completed`` | ``skipped`` | ``failed``."""
    touched_topics: tuple[str, ...] = ()
    skipped_reason: str | None = None
    """``memory_tool`` | ``queued``."""
    patches: tuple[Patch, ...] = ()
    written: tuple[str, ...] = ()
    """Relative paths of topic files created or changed."""
    processed_offset: int | None = None
    strategy: str = "heuristic"
    fallback_reason: str | None = None
    error: str | None = None
    """Why the extraction failed (``failed``): one line naming the exception and, where known, the file."""
    warnings: tuple[str, ...] = ()
    """Files ignored or repaired on the way (corrupt state file, unsafe topic file, stale index), one per line."""

    @property
    def system_message(self) -> str | None:
        """``Managed auto-memory updated: <topic>.md, …`` when topics were touched."""
        topics = ", ".join(f"{t}.md" for t in self.touched_topics)
        return f"Managed auto-memory updated: {topics}" if topics else None


def slugify(summary: str) -> str:
    """Lower-case, non-alphanumeric runs to ``-``, trimmed, ≤ 80 chars, ``memory`` when empty (spec §5.5)."""
    slug = _SLUG_RUN.sub("-", summary.lower()).strip("-")[:80].strip("-")
    return slug or "memory"


def _title(summary: str) -> str:
    return summary[:69] + "..." if len(summary) > 72 else summary


def _new_key(store: Store, topic: str, summary: str, *, now: datetime) -> str:
    slug = slugify(summary)
    for n in range(1, 101):
        key = f"{topic}/{slug}{f'-{n}' if n > 1 else ''}.md"
        if store.stat(key) is None:
            return key
    return f"{topic}/{slug}-{int(to_ms(now))}.md"


_DocKey = tuple[str, str]


def _doc_key(doc: TopicDoc) -> _DocKey | None:
    first = parse_entries(doc.body)
    return (doc.type, first[0].summary.lower()) if first else None


def apply_patches(store: Store, patches: Sequence[Patch], docs: Sequence[TopicDoc], *, now: datetime) -> list[str]:
    """Merge into a doc whose first entry has the same summary, else create ``<topic>/<slug>.md`` (spec §5.5).

    Returns the keys written, in order. Linear in patches + docs: docs are bucketed by (type, first summary), in
    the order the spec's linear search would meet them (a doc just written moves to the end).
    """
    buckets: dict[_DocKey, dict[str, TopicDoc]] = {}
    key_of: dict[str, _DocKey | None] = {}
    for d in docs:
        k = key_of[d.relative_path] = _doc_key(d)
        if k is not None:
            buckets.setdefault(k, {}).setdefault(d.relative_path, d)
    written: dict[str, None] = {}
    for patch in patches:
        incoming = Entry(patch.summary, patch.why, patch.how_to_apply)
        bucket = buckets.get((patch.topic, patch.summary.lower()))
        target = next(iter(bucket.values()), None) if bucket else None
        if target is not None:
            entries = parse_entries(target.body)
            merged = merge_entry(entries[0], incoming)
            if merged == entries[0]:
                continue
            body = render_entries([merged, *entries[1:]])
            text = replace_body(store.read(target.relative_path), body)
            if text is None:
                continue
            if not written:
                mark_index_dirty(store)
            store.write(target.relative_path, text)
            key, kind = target.relative_path, target.type
        else:
            key, kind = _new_key(store, patch.topic, patch.summary, now=now), patch.topic
            body = render_entries([incoming])
            if not written:
                mark_index_dirty(store)
            store.write(key, render_topic(name=_title(patch.summary), description=patch.summary,
                                          kind=patch.topic, body=body))
        # what a re-scan would find: only type, path and body matter for later merges (no re-read, no re-parse)
        doc = TopicDoc(kind, key, key, "", body.strip())
        old = key_of.pop(key, None)
        if old is not None:
            buckets.get(old, {}).pop(key, None)
        k = key_of[key] = _doc_key(doc)
        if k is not None:
            buckets.setdefault(k, {})[key] = doc
        written.setdefault(key, None)
    return list(written)


def plan_by_model(
    lines: Sequence[TranscriptLine], docs: Sequence[TopicDoc], *, model: Model, timeout_s: float
) -> list[Patch]:
    """Ask the model for patches for the unprocessed slice; the same filters and dedupe then apply."""
    system = render_prompt("extract_system", manifest=build_manifest(docs))
    user = render_prompt("extract_user", lines=lines)
    reply = model.query(
        ModelRequest(
            purpose=EXTRACT_PURPOSE,
            messages=(Message("system", system.text), Message("user", user.text)),
            schema=EXTRACT_SCHEMA,
            timeout_s=timeout_s,
            prompt_version=f"{system.version}+{user.version}",
        )
    )
    raw: list[Any] = list(checked_data(reply, EXTRACT_SCHEMA)["patches"])
    offset = lines[-1].offset if lines else 0
    return dedupe_patches(
        Patch(p["topic"], str(p["summary"]), p.get("why") or None, p.get("how_to_apply") or None, offset)
        for p in raw
    )


def run_extract(
    store: Store,
    request: ExtractRequest,
    *,
    now: datetime,
    root: str,
    model: Model | None = None,
    timeout_s: float = EXTRACT_TIMEOUT_S,
    cache: DocCache | None = None,
) -> ExtractOutcome:
    """Extract durable facts from the unprocessed slice of one session (spec §5.3 with the §5.5 pipeline).

    Never raises for storage, state-file, path or model trouble: such a run returns ``failed`` with ``error``
    (and the cursor does not move, so nothing is skipped); ignored or repaired files are listed in ``warnings``.
    """
    warnings: list[str] = []
    try:
        outcome = _extract(store, request, now=now, root=root, model=model, timeout_s=timeout_s, cache=cache,
                           warnings=warnings)
    except ReplayAborted:  # a harness without a recorded answer: the run must say so
        raise
    except Exception as exc:  # documented: a failed result, never an exception
        outcome = ExtractOutcome("failed", error=describe_error(exc))
    return replace(outcome, warnings=tuple(warnings)) if warnings else outcome


def _extract(
    store: Store, request: ExtractRequest, *, now: datetime, root: str, model: Model | None, timeout_s: float,
    cache: DocCache | None, warnings: list[str],
) -> ExtractOutcome:
    scaffold(store, now=now)
    if repair_stale_index(store, cache=cache):
        warnings.append("MEMORY.md: stale after an interrupted operation; rebuilt")
    cursor = read_cursor(store, warn=warnings.append)
    lines = transcript(request.history)
    start = cursor.get("processedOffset", 0) if cursor.get("sessionId") == request.session_id else 0
    start = start if isinstance(start, int) and not isinstance(start, bool) and start >= 0 else 0
    next_offset = len(request.history)  # fix: spec §12 — full-history offsets, one index space
    if any(writes_memory(m, root=root) for m in request.history[start:]):
        # fix: spec §12 — only the unprocessed slice counts, and the cursor moves past it (as Claude Code's
        # hasMemoryWritesSince does), so one write by the main agent does not silence the rest of the session
        write_cursor(store, session_id=request.session_id, processed_offset=next_offset, now=now)
        return ExtractOutcome("skipped", skipped_reason="memory_tool", processed_offset=next_offset)
    sliced = [ln for ln in lines if ln.offset >= start]
    user_lines = [ln for ln in sliced if ln.role == "user"]
    if not user_lines:
        write_cursor(store, session_id=request.session_id, processed_offset=next_offset, now=now)
        return ExtractOutcome("completed", processed_offset=next_offset)
    result = scan(store, cache=cache)
    warnings.extend(result.warnings)
    docs = result.docs
    patches, used_model, fallback = model_or_heuristic(
        (lambda: plan_by_model(sliced, docs, model=model, timeout_s=timeout_s)) if model is not None else None,
        lambda: extract_heuristic((ln.offset, ln.text) for ln in user_lines),
    )
    strategy = "model" if used_model else "heuristic"
    written = apply_patches(store, patches, docs, now=now)
    touched = tuple(t for t in MEMORY_TYPES if any(k.startswith(f"{t}/") for k in written))
    update_meta(
        store,
        now=now,
        warn=warnings.append,
        lastExtractionAt=iso_ms(now),
        lastExtractionSessionId=request.session_id,
        lastExtractionTouchedTopics=list(touched),
        lastExtractionStatus="updated" if touched else "noop",
    )
    if touched or written:
        rebuild_index(store, cache=cache)
    write_cursor(store, session_id=request.session_id, processed_offset=next_offset, now=now)
    return ExtractOutcome(
        "completed", touched, None, tuple(patches), tuple(written), next_offset, strategy, fallback
    )


@dataclass
class ExtractScheduler:
    """One extraction running per store, at most one trailing request that later requests supersede (§5.2).

    ``schedule`` runs the extraction in the caller's thread; a call that arrives from another thread while one
    runs is queued (or supersedes the queued one) and returns ``skipped``/``queued`` at once; the running call
    then runs the trailing request before it returns.
    """

    store: Store
    root: str
    model: Model | None = None
    events: EventSink = field(default_factory=NullSink)
    cache: DocCache | None = None
    timeout_s: float = EXTRACT_TIMEOUT_S
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _running: bool = False
    _queued: tuple[ExtractRequest, datetime] | None = None
    _held: bool = False
    trailing_runs: int = 0
    """How many queued requests have been run as trailing extractions."""

    def schedule(self, request: ExtractRequest, *, now: datetime) -> ExtractOutcome:
        """Run, queue or supersede an extraction request, emitting one event per exit."""
        with self._lock:
            if self._running:
                self._queued = (request, now)
                outcome = ExtractOutcome("skipped", skipped_reason="queued")
                self._emit(request, outcome, 0.0)
                return outcome
            self._running = True
        try:
            outcome = self._run(request, now)
        finally:
            self._drain()
        return outcome

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """Act as if an extraction were running: requests scheduled inside are queued (the last one wins) and
        run as one trailing extraction when the block exits."""
        self.begin_hold()
        try:
            yield
        finally:
            self.release()

    @property
    def holding(self) -> bool:
        """Whether ``begin_hold`` acts as a running extraction now."""
        return self._held

    def begin_hold(self) -> None:
        """Act as if an extraction were running until ``release``: requests scheduled meanwhile are queued."""
        with self._lock:
            if self._running:
                raise RuntimeError("an extraction is already running")
            self._running = self._held = True

    def release(self) -> list[tuple[str, ExtractOutcome]]:
        """End ``begin_hold``: the pretend extraction finishes and the queued request runs as the trailing
        extraction (§5.2). Returns each trailing run with its request's session id."""
        with self._lock:
            if not self._held:
                raise RuntimeError("no hold to release")
            self._held = False
        return self._drain()

    def _drain(self) -> list[tuple[str, ExtractOutcome]]:
        """Run queued trailing requests until none is left, then mark the scheduler idle."""
        ran: list[tuple[str, ExtractOutcome]] = []
        try:
            while True:
                with self._lock:
                    queued, self._queued = self._queued, None
                    if queued is None:
                        self._running = False
                        return ran
                self.trailing_runs += 1
                ran.append((queued[0].session_id, self._run(*queued)))
        except BaseException:
            with self._lock:
                self._running = False
            raise

    def _run(self, request: ExtractRequest, now: datetime) -> ExtractOutcome:
        t0 = monotonic_ms()
        try:
            outcome = run_extract(
                self.store, request, now=now, root=self.root, model=self.model,
                timeout_s=self.timeout_s, cache=self.cache,
            )
        except ReplayAborted:  # a harness without a recorded answer: the run must say so
            raise
        except Exception as exc:  # run_extract already catches; belt and braces for the promise
            outcome = ExtractOutcome("failed", error=describe_error(exc))
        self._emit(request, outcome, monotonic_ms() - t0)
        return outcome

    def _emit(self, request: ExtractRequest, outcome: ExtractOutcome, duration_ms: float) -> None:
        self.events.emit(
            ExtractEvent(
                session_id=request.session_id,
                status=outcome.status,
                duration_ms=duration_ms,
                strategy=outcome.strategy,
                skipped_reason=outcome.skipped_reason,
                patches_count=len(outcome.patches),
                touched_topics=outcome.touched_topics,
                fallback_reason=outcome.fallback_reason,
                error=outcome.error,
                warnings=outcome.warnings,
            )
        )
