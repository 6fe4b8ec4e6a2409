"""Recall: heuristic scoring (spec §7.3), model selection (§7.4), the prompt block (§7.5), the entry point (§7.2)."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from memory_core.clock import monotonic_ms
from memory_core.errors import ModelError
from memory_core.events import EventSink, NullSink, RecallEvent
from memory_core.files.age import freshness_text, memory_age, memory_age_days
from memory_core.files.formats import iso_from_ms, locale_key
from memory_core.files.ranking import Ranker
from memory_core.files.recall_index import HeuristicIndex
from memory_core.files.scan import DocCache, scan
from memory_core.files.snapshot import RecallCache, cached_scan
from memory_core.files.store import Store
from memory_core.files.topic import MemoryType, TopicDoc
from memory_core.model import Message, Model, ModelRequest, model_or_heuristic
from memory_core.prompts import render_prompt

DEFAULT_RECALL_LIMIT: Final = 5
RECALL_BODY_CHARS: Final = 1200
RECALL_TIMEOUT_S: Final = 5.0
RECALL_PURPOSE: Final = "auto-memory-recall"
TYPE_KEYWORDS: Final[dict[MemoryType, frozenset[str]]] = {
    "user": frozenset({"user", "preference", "preferences", "background", "role", "terse"}),
    "feedback": frozenset({"feedback", "rule", "rules", "avoid", "style", "summary"}),
    "project": frozenset({"project", "goal", "goals", "incident", "deadline", "release"}),
    "reference": frozenset({"reference", "dashboard", "ticket", "docs", "doc", "link"}),
}
RECALL_SCHEMA: Final = {
    "type": "object",
    "properties": {"selected_memories": {"type": "array", "items": {"type": "string"}}},
    "required": ["selected_memories"],
    "additionalProperties": False,
}
_SPLIT: Final = re.compile(r"[^a-z0-9]+")


def tokenize(query: str) -> list[str]:
    """Lower-case ASCII alphanumeric tokens of ≥ 3 chars, de-duplicated in order; no stopwords (parity §7.3)."""
    seen: dict[str, None] = {}
    for token in _SPLIT.split(query.lower()):
        if len(token) >= 3:
            seen.setdefault(token, None)
    return list(seen)


def score_doc(tokens: Sequence[str], doc: TopicDoc) -> int:
    """+2 per token found as a substring, +1 per type keyword, +1 once for a non-empty body (spec §7.3)."""
    body = doc.normalized_body
    haystack = " ".join((doc.type, doc.title, doc.description, body)).lower()
    keywords = TYPE_KEYWORDS[doc.type]
    score = sum((2 if t in haystack else 0) + (1 if t in keywords else 0) for t in tokens)
    return score + (1 if body else 0)


def select_heuristic(query: str, docs: Sequence[TopicDoc], *, limit: int = DEFAULT_RECALL_LIMIT) -> list[TopicDoc]:
    """Keep score > 0, sort by score desc then type, stable on recency; take ``limit`` (spec §7.3)."""
    tokens = tokenize(query)
    if not tokens or limit <= 0:
        return []
    scored = [(score_doc(tokens, d), i, d) for i, d in enumerate(docs)]
    ranked = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], locale_key(s[2].type), s[1]))
    return [d for _, _, d in ranked[:limit]]


_REFERENCE_SCORE: Final = score_doc
"""The scoring ``HeuristicIndex`` implements; a replaced ``score_doc`` (mutation tests) takes the plain path."""


def _select_cached(query: str, docs: Sequence[TopicDoc], *, cache: RecallCache, excluded: Collection[str],
                   limit: int) -> list[TopicDoc]:
    """``select_heuristic`` through the cache's query index (built on the second query of an unchanged scan)."""
    result = cache.result
    cache.uses += 1
    if result is None or cache.uses < 2 or score_doc is not _REFERENCE_SCORE:
        return select_heuristic(query, docs, limit=limit)
    if not isinstance(cache.index, HeuristicIndex):
        cache.index = HeuristicIndex.build(result.docs, cache.derive)
    return cache.index.select(tokenize(query), keywords=TYPE_KEYWORDS, excluded=excluded, limit=limit)


def build_manifest(docs: Sequence[TopicDoc]) -> str:
    """``- [type] path (ISO mtime): description`` per doc, in input order (spec §7.4)."""
    lines = []
    for d in docs:
        head = f"- [{d.type}] {d.relative_path} ({iso_from_ms(d.mtime_ms)})"
        lines.append(f"{head}: {d.description}" if d.description else head)
    return "\n".join(lines)


def recall_request(
    query: str, docs: Sequence[TopicDoc], *, limit: int, timeout_s: float, recent_tools: Sequence[str] = (),
    manifest: str | None = None,
) -> ModelRequest:
    """The selector side-query of spec §7.4: system instruction, ``Query:`` message, exact schema.

    ``manifest`` is ``build_manifest(docs)`` when the caller has it already.
    """
    system = render_prompt("recall_system", limit=limit)
    user = render_prompt(
        "recall_user", query=query.strip(), manifest=build_manifest(docs) if manifest is None else manifest,
        recent_tools=list(recent_tools),
    )
    paths = sorted({d.relative_path for d in docs})
    grammar = {**RECALL_SCHEMA, "properties": {"selected_memories": {
        "type": "array", "items": {"type": "string", "enum": paths}, "maxItems": limit}}}
    return ModelRequest(
        purpose=RECALL_PURPOSE,
        messages=(Message("system", system.text), Message("user", user.text)),
        schema=RECALL_SCHEMA,
        timeout_s=timeout_s,
        prompt_version=f"{system.version}+{user.version}",
        grammar=grammar,
    )


def select_by_model(
    query: str,
    docs: Sequence[TopicDoc],
    *,
    model: Model,
    limit: int = DEFAULT_RECALL_LIMIT,
    timeout_s: float = RECALL_TIMEOUT_S,
    recent_tools: Sequence[str] = (),
    manifest: str | None = None,
) -> list[TopicDoc]:
    """Ask the model which docs help; validate per spec §7.4; result in the model's order.

    Raises ``ModelError`` on an invalid answer: not an array, more than ``limit`` entries, or any unknown path
    (parity: one unknown path rejects the whole answer).
    """
    if not docs or limit <= 0 or not query.strip():
        return []
    reply = model.query(recall_request(query, docs, limit=limit, timeout_s=timeout_s, recent_tools=recent_tools,
                                       manifest=manifest))
    picked = reply.data.get("selected_memories")
    if not isinstance(picked, list):
        raise ModelError("Recall selector must return selected_memories array", reason="schema")
    if len(picked) > limit:
        raise ModelError(f"Recall selector returned too many documents: {len(picked)}", reason="too_many")
    by_path = {d.relative_path: d for d in docs}
    if any(p not in by_path for p in picked):
        raise ModelError("Recall selector returned unknown relative path", reason="unknown_path")
    out: list[TopicDoc] = []
    for path in picked:
        if by_path[path] not in out:
            out.append(by_path[path])
    return out[:limit]


def build_recall_prompt(docs: Sequence[TopicDoc], *, now: datetime) -> str:
    """The ``## Relevant memory`` block with ages, 1,200-char bodies and freshness notes (spec §7.5)."""
    if not docs:
        return ""
    lines = [
        "## Relevant memory",
        "",
        "Use the following memories only when they are directly relevant to the current request. "
        "Verify file/function claims before relying on them.",
        "",
    ]
    for d in docs:
        body = d.normalized_body or "_No detailed entries yet._"
        if len(body) > RECALL_BODY_CHARS:
            body = body[:RECALL_BODY_CHARS].rstrip() + "\n\n> NOTE: Relevant memory truncated for prompt budget."
        lines += [f"### {d.title} ({d.relative_path or d.filename})", f"Saved {memory_age(d.mtime_ms, now=now)}."]
        lines += [d.description, "", body]
        if memory_age_days(d.mtime_ms, now=now) > 1:
            lines += ["", f"> NOTE: {freshness_text(d.mtime_ms, now=now)}"]
        lines.append("")
    return "\n".join(lines)  # spec §7.5: each doc ends with a blank line, so the block ends with a single "\n"


@dataclass(frozen=True, slots=True)
class RecallOutcome:
    """What recall surfaced and how."""

    prompt: str
    """The prompt block (``''`` when nothing was selected)."""
    selected: tuple[TopicDoc, ...]
    """Selected docs in rank order."""
    strategy: str
    """The strategy that actually produced ``selected``: ``none`` | ``heuristic`` | ``model``."""
    docs_scanned: int
    """Docs considered after exclusion."""
    fallback_reason: str | None = None
    """Why the model path fell back to the heuristic (``timeout``, ``invalid_json``, ``unknown_path`` …)."""
    scores: tuple[float, ...] = ()
    """The ranker's score of each selected doc (empty for the heuristic and model paths)."""


def recall(
    store: Store,
    query: str,
    *,
    now: datetime,
    model: Model | None = None,
    excluded: Collection[str] = (),
    limit: int = DEFAULT_RECALL_LIMIT,
    timeout_s: float = RECALL_TIMEOUT_S,
    recent_tools: Sequence[str] = (),
    events: EventSink | None = None,
    session_id: str = "",
    cache: DocCache | None = None,
    ranker: Ranker | None = None,
) -> RecallOutcome:
    """Resolve the relevant-memory prompt for a query (spec §7.2); ``model=None`` is the heuristic path.

    With a ``ranker`` (BM25, embedding, hybrid) that ranker selects instead, with its own abstention threshold.

    With a model: an empty model answer is strategy ``none`` with no fallback (parity); any model error falls
    back to the heuristic and the outcome names the reason. Exactly one event is emitted per call.

    A ``RecallCache`` (a ``DocCache``) makes repeated calls cheap: an unchanged store is not rescanned, and from
    the second call on the heuristic ranks through a query index; the outcome is the same as with any cache.
    """
    t0 = monotonic_ms()
    fast = cache if isinstance(cache, RecallCache) else None
    result = cached_scan(store, fast) if fast is not None else scan(store, cache=cache)
    docs = [d for d in result.docs if d.relative_path not in excluded] if excluded else list(result.docs)
    selected: list[TopicDoc] = []
    scores: tuple[float, ...] = ()
    strategy, fallback = "none", None
    if query.strip() and docs and limit > 0 and ranker is not None:
        ranked = ranker.rank(query, docs, limit=limit)
        selected, scores = [r.doc for r in ranked], tuple(round(r.score, 6) for r in ranked)
        strategy = ranker.name if selected else "none"
    elif query.strip() and docs and limit > 0:
        manifest = "\n".join(fast.derive(d).manifest_line for d in docs) if fast and model else None
        selected, used_model, fallback = model_or_heuristic(
            (lambda: select_by_model(query, docs, model=model, limit=limit, timeout_s=timeout_s,
                                     recent_tools=recent_tools, manifest=manifest)) if model is not None else None,
            (lambda: _select_cached(query, docs, cache=fast, excluded=excluded, limit=limit)) if fast
            else (lambda: select_heuristic(query, docs, limit=limit)),
        )
        # parity: spec §7.2 — an empty model answer is strategy none, with no heuristic fallback
        strategy = ("model" if used_model else "heuristic") if selected else "none"
    outcome = RecallOutcome(build_recall_prompt(selected, now=now), tuple(selected), strategy, len(docs), fallback,
                            scores)
    (events or NullSink()).emit(
        RecallEvent(
            session_id=session_id,
            query_length=len(query),
            docs_scanned=len(docs),
            docs_selected=len(selected),
            strategy=strategy,
            duration_ms=monotonic_ms() - t0,
            selected=tuple(d.relative_path for d in selected),
            fallback_reason=fallback,
            dropped_files=len(result.dropped),
            top_score=scores[0] if scores else None,
        )
    )
    return outcome
