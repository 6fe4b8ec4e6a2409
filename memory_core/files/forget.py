"""Forget: candidates with stable ids (spec §8.1), selection (§8.2), per-entry deletion (§8.3)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Final

from memory_core.clock import monotonic_ms
from memory_core.errors import ModelError, ReplayAborted, describe_error
from memory_core.events import EventSink, ForgetEvent, NullSink
from memory_core.files.entries import parse_entries, render_entries
from memory_core.files.formats import collapse_ws
from memory_core.files.index import mark_index_dirty, rebuild_index, repair_stale_index
from memory_core.files.scan import DocCache, scan
from memory_core.files.state import scaffold, update_meta_best_effort
from memory_core.files.store import Store
from memory_core.files.topic import TopicDoc, parse_topic, replace_body
from memory_core.model import Message, Model, ModelRequest, checked_data, model_or_heuristic
from memory_core.prompts import render_prompt

FORGET_TIMEOUT_S: Final = 8.0
MAX_SAFE_INTEGER: Final = 2**53 - 1
"""Spec §8.4: forget selects with ``limit = Number.MAX_SAFE_INTEGER`` (unbounded); the model prompt shows it."""
FORGET_PURPOSE: Final = "auto-memory-forget-selection"
FORGET_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "selectedCandidateIds": {"type": "array", "items": {"type": "string"}},
        "reasoning": {"type": "string"},
    },
    "required": ["selectedCandidateIds"],
}


@dataclass(frozen=True, slots=True)
class ForgetCandidate:
    """One entry that could be forgotten."""

    id: str
    """``path`` when the doc has one entry, else ``path:<i>`` (0-based)."""
    topic: str
    summary: str
    relative_path: str
    why: str | None = None
    how_to_apply: str | None = None

    def search_text(self) -> str:
        """Summary, why and how, lower-cased (spec §2.4)."""
        return " ".join(p for p in (self.summary, self.why, self.how_to_apply) if p).lower()


@dataclass(frozen=True, slots=True)
class ForgetOutcome:
    """What forget removed."""

    query: str
    removed: tuple[ForgetCandidate, ...]
    touched_topics: tuple[str, ...]
    strategy: str
    candidates: int
    fallback_reason: str | None = None
    reasoning: str | None = None
    error: str | None = None
    """Set when forget could not run (storage, path or state trouble): one line naming the exception and file;
    nothing was removed that is not listed in ``removed``."""
    warnings: tuple[str, ...] = ()
    """Files skipped or repaired on the way (unsafe or unreadable topic file, stale index)."""

    @property
    def system_message(self) -> str | None:
        """``Managed auto-memory forgot N entry|entries from: type/, …`` when something was removed."""
        if not self.removed:
            return None
        noun = "entry" if len(self.removed) == 1 else "entries"
        dirs = ", ".join(f"{t}/" for t in self.touched_topics)
        return f"Managed auto-memory forgot {len(self.removed)} {noun} from: {dirs}"


def forget_candidates(docs: Sequence[TopicDoc]) -> list[ForgetCandidate]:
    """Every entry of every doc, in doc then entry order, with stable ids (spec §8.1)."""
    out: list[ForgetCandidate] = []
    for doc in docs:
        entries = parse_entries(doc.body)
        for i, e in enumerate(entries):
            cid = doc.relative_path if len(entries) == 1 else f"{doc.relative_path}:{i}"
            out.append(ForgetCandidate(cid, doc.type, e.summary, doc.relative_path, e.why, e.how_to_apply))
    return out


def select_forget_heuristic(
    query: str, candidates: Sequence[ForgetCandidate], *, limit: int
) -> list[ForgetCandidate]:
    """Candidates whose search text contains the whole normalised query, first ``limit`` (spec §8.2)."""
    needle = collapse_ws(query).lower()
    if not needle:
        return []
    return [c for c in candidates if needle in c.search_text()][:limit]


def select_forget_by_model(
    query: str, candidates: Sequence[ForgetCandidate], *, model: Model, limit: int, timeout_s: float
) -> tuple[list[ForgetCandidate], str | None]:
    """Model selection: unknown ids reject the answer; result in candidate order, cut to ``limit`` (§8.2)."""
    prompt = render_prompt("forget_user", query=query.strip(), limit=limit, candidates=candidates)
    reply = model.query(
        ModelRequest(
            purpose=FORGET_PURPOSE,
            messages=(Message("user", prompt.text),),
            schema=FORGET_SCHEMA,
            timeout_s=timeout_s,
            prompt_version=prompt.version,
            grammar={**FORGET_SCHEMA, "properties": {
                "selectedCandidateIds": {"type": "array", "items": {"type": "string", "enum": [c.id for c in candidates]}},
                "reasoning": {"type": "string"}}},
        )
    )
    data = checked_data(reply, FORGET_SCHEMA)
    ids = data["selectedCandidateIds"]
    known = {c.id for c in candidates}
    for cid in ids:
        if cid not in known:
            raise ModelError(f"Unknown candidate id: {cid}", reason="unknown_id")
    chosen = set(ids)
    reasoning = data.get("reasoning")
    return [c for c in candidates if c.id in chosen][:limit], reasoning if isinstance(reasoning, str) else None


def delete_matches(
    store: Store, matches: Sequence[ForgetCandidate], *, now: datetime, cache: DocCache | None = None
) -> tuple[list[ForgetCandidate], list[str]]:
    """Delete matched entries per file; unlink files left empty; rebuild the index (spec §8.3).

    Returns (removed candidates, touched topics). Same-summary siblings go too (parity: summary equality).
    """
    if not matches:
        return [], []
    scaffold(store, now=now)
    mark_index_dirty(store)
    by_file: dict[str, list[ForgetCandidate]] = {}
    for m in matches:
        by_file.setdefault(m.relative_path, []).append(m)
    removed: list[ForgetCandidate] = []
    touched: list[str] = []
    for path, file_matches in by_file.items():
        try:
            text = store.read(path)
            match_summaries = {m.summary.lower() for m in file_matches}
            doc = parse_topic(text, relative_path=path)
            if doc is None:
                store.delete(path)
                count = len(file_matches)
            else:
                entries = parse_entries(doc.body)
                kept = [e for e in entries if e.summary.lower() not in match_summaries]
                if not kept:
                    store.delete(path)
                else:
                    new_text = replace_body(text, render_entries(kept))
                    store.write(path, new_text or text)
                count = len(entries) - len(kept)
        except (OSError, ValueError):
            continue  # parity: spec §8.3 swallows per-file errors (an unsafe path too)
        removed += file_matches[:count]
        for m in file_matches[:count]:
            if m.topic not in touched:
                touched.append(m.topic)
    if touched:
        update_meta_best_effort(store, now=now)
    rebuild_index(store, cache=cache)  # also clears the stale-index marker set above
    return removed, touched


def forget(
    store: Store,
    query: str,
    *,
    now: datetime,
    model: Model | None = None,
    limit: int = MAX_SAFE_INTEGER,
    timeout_s: float = FORGET_TIMEOUT_S,
    events: EventSink | None = None,
    session_id: str = "",
    cache: DocCache | None = None,
) -> ForgetOutcome:
    """Select and delete entries matching ``query`` (spec §8.4: unbounded limit by default, no confirmation).

    Never raises for storage, path, state or model trouble: the outcome then carries ``error`` (strategy
    ``none`` when nothing could be selected), and exactly one event is emitted either way.
    """
    t0 = monotonic_ms()
    warnings: list[str] = []
    try:
        outcome = _forget(store, query, now=now, model=model, limit=limit, timeout_s=timeout_s, cache=cache,
                          warnings=warnings)
    except ReplayAborted:  # a harness without a recorded answer: the run must say so
        raise
    except Exception as exc:  # documented: a result with ``error``, never an exception
        outcome = ForgetOutcome(query.strip(), (), (), "none", 0, error=describe_error(exc))
    outcome = replace(outcome, warnings=tuple(warnings))
    elapsed = monotonic_ms() - t0
    (events or NullSink()).emit(ForgetEvent(session_id, len(query), outcome.strategy, elapsed,
                                            outcome.fallback_reason, warnings=tuple(warnings), candidates=outcome.candidates,
                                            removed_entries=len(outcome.removed),
                                            touched_topics=outcome.touched_topics))
    return outcome


def _forget(
    store: Store, query: str, *, now: datetime, model: Model | None, limit: int, timeout_s: float,
    cache: DocCache | None, warnings: list[str],
) -> ForgetOutcome:
    if repair_stale_index(store, cache=cache):
        warnings.append("MEMORY.md: stale after an interrupted operation; rebuilt")
    trimmed = query.strip()
    candidates: list[ForgetCandidate] = []
    if trimmed:
        result = scan(store, cache=cache)
        warnings.extend(result.warnings)
        candidates = forget_candidates(result.docs)
    selected: list[ForgetCandidate] = []
    strategy: str = "none"
    fallback: str | None = None
    reasoning: str | None = None
    if candidates:
        def by_model() -> tuple[list[ForgetCandidate], str | None]:
            assert model is not None
            return select_forget_by_model(trimmed, candidates, model=model, limit=limit, timeout_s=timeout_s)

        def heuristic() -> tuple[list[ForgetCandidate], str | None]:
            return select_forget_heuristic(trimmed, candidates, limit=limit), None

        (selected, reasoning), used_model, fallback = model_or_heuristic(
            by_model if model is not None else None, heuristic
        )
        # parity: spec §8.2 — an empty model selection is strategy none, with no fallback
        strategy = ("model" if used_model else "heuristic") if selected else "none"
    removed, touched = delete_matches(store, selected, now=now, cache=cache)
    return ForgetOutcome(trimmed, tuple(removed), tuple(touched), strategy, len(candidates), fallback, reasoning)
