"""Sessions of turns and real-time extraction (spec §3.1, §3.2, §3.8), run inline so replays are deterministic."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from memory_core.errors import ModelError
from memory_core.model import Model
from memory_core.sqlite.db import Database
from memory_core.sqlite.episodes import generate_episode
from memory_core.sqlite.extraction import extract_legacy, extract_with_model, save_item
from memory_core.sqlite.lifecycle import Attempt
from memory_core.sqlite.tables import enqueue, mark_extracted, next_turn_index, save_turn

MIN_TURN_CHARS: Final = 30
MAX_PER_SESSION: Final = 5
MIN_EXTRACT_CHARS: Final = 10
RECENT_MESSAGES: Final = 10


_SURROGATE = re.compile("[\ud800-\udfff]")


def storable(text: str) -> str:
    """``text`` as SQLite can store it: a lone surrogate (no UTF-8 form, e.g. a file name decoded with
    ``surrogateescape``) becomes U+FFFD; every other character is kept."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


MANUAL_TYPES: Final = ("fact", "preference", "skill", "error", "rule")


def manual_fields(content: object, memory_type: object, importance: object) -> tuple[str, str, float]:
    """``add_memory``'s content (stripped, storable), type (spec §3.6: anything else is ``fact``) and importance.

    Whitespace-only content is stored as an empty memory (§3.6 refuses nothing; scenario life-gen15-dedupe-blank-*).
    fix: a NaN importance was stored as NULL (read back as 0.5); an integer past a float's range raised OverflowError
    from sqlite3; a ``None`` content or type raised AttributeError. Each is now a ``ValueError`` naming the argument.
    """
    if not isinstance(content, str):
        raise ValueError(f"add_memory content must be a string, got {content!r:.80}")
    if not isinstance(memory_type, str):
        raise ValueError(f"add_memory type must be a string, got {memory_type!r:.80}")
    try:
        value = float(importance) if isinstance(importance, int | float) and not isinstance(importance, bool) else None
    except OverflowError:
        value = None
    if value is None or value != value:
        raise ValueError(f"add_memory importance must be a number, got {importance!r:.80}")
    kind = memory_type.lower() if memory_type.lower() in MANUAL_TYPES else "fact"
    return storable(content.strip()), kind, value


@dataclass(frozen=True, slots=True)
class Turn:
    """One conversation turn as the harness gives it."""

    role: str
    content: str
    tool_calls: tuple[Mapping[str, Any], ...] = ()
    tool_results: tuple[Mapping[str, Any], ...] = ()

    @classmethod
    def of(cls, raw: object) -> Turn:
        """Accept a ``Turn``, a mapping with ``role``/``content`` (or ``kind``/``text``) and optional tool lists, or
        any object with ``role``/``kind`` and ``content``/``text`` attributes (e.g. the harness's ``Turn``)."""
        role: object
        content: object
        if isinstance(raw, Turn):
            role, content, calls, results = raw.role, raw.content, raw.tool_calls, raw.tool_results
        elif isinstance(raw, Mapping):
            role, content = raw.get("role", raw.get("kind")), raw.get("content", raw.get("text"))
            calls, results = raw.get("tool_calls") or (), raw.get("tool_results") or ()
        else:
            role, content = getattr(raw, "role", getattr(raw, "kind", None)), getattr(raw, "content", getattr(raw, "text", None))
            calls, results = (), ()
        if not isinstance(role, str) or not isinstance(content, str):
            raise ValueError(f"a turn needs a string 'role' (or 'kind') and 'content' (or 'text'), got {raw!r:.120}")
        # fix: a lone surrogate raised UnicodeEncodeError (role, content and tool lists alike)
        return cls(storable(role), storable(content), _tool_list(calls, "tool_calls"), _tool_list(results, "tool_results"))


def _tool_list(value: object, name: str) -> tuple[Mapping[str, Any], ...]:
    """A turn's tool calls or results as stored: a list of JSON objects, a lone surrogate made U+FFFD.

    fix: an entry that is no mapping raised AttributeError from extract (after the turn was stored); a value JSON
    cannot hold (a set, bytes) raised TypeError from ``add_turns``. Both are a ``ValueError`` naming the list.
    """
    if not value:
        return ()
    if not isinstance(value, list | tuple) or not all(isinstance(x, Mapping) for x in value):
        raise ValueError(f"a turn's {name} must be a list of mappings, got {value!r:.120}")
    try:
        text = json.dumps(list(value), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"a turn's {name} must hold JSON values only: {exc}") from None
    return tuple(value) if storable(text) == text else tuple(json.loads(storable(text)))


@dataclass(frozen=True, slots=True)
class ExtractResult:
    """What one ``extract(session)`` did."""

    session_id: str
    status: str
    """``completed`` (the seed has no skip or failure status: model failures fall back to the legacy extractor)."""
    note: str | None = None
    """Why nothing was attempted: ``no_turns`` | ``no_eligible_turns`` (guards: user, ≥ 30 characters, ≤ 5)."""
    strategy: str = "heuristic"
    fallback_reason: str | None = None
    memory_ids: tuple[str, ...] = ()
    inserted: int = 0
    merged: int = 0
    attempts: int = 0
    episodes: tuple[str, ...] = ()
    expired_removed: int = 0
    enqueued: int = 0
    touched: tuple[str, ...] = ()
    """Memory types written (v2 names), sorted."""


@dataclass(slots=True)
class SessionState:
    """One session's turns not yet handled by ``extract`` and its extraction counter."""

    offset: int
    pending: list[tuple[int, Turn, str]] = field(default_factory=list)
    """(turn_index, turn, timestamp)."""
    extraction_count: int = 0


def run_extractor(model: Model | None, role: str, content: str, tool_calls: Sequence[Mapping[str, Any]] = (),
                  tool_results: Sequence[Mapping[str, Any]] = (), *, db: Database) -> tuple[Attempt, bool]:
    """The model path, or the legacy keyword extractor when there is no model or it fails (with the reason).

    Returns (attempt, whether the model failed). The extractor's own guard comes first: a turn shorter than 10
    characters (stripped) without tool calls gives nothing and costs no model call.
    """
    if len(content.strip()) < MIN_EXTRACT_CHARS and not tool_calls:
        return Attempt((), "model" if model is not None else "heuristic"), False
    if model is None:
        return Attempt(tuple(extract_legacy(content) if role == "user" else ()), "heuristic"), False
    try:
        items = extract_with_model(model, role, content, tool_calls, tool_results,
                                   none_substring=db.quirks.q9_none_substring,
                                   bad_item_drops_batch=db.quirks.q9_importance_drops_batch)
        return Attempt(tuple(items), "model"), False
    except ModelError as exc:
        return Attempt(tuple(extract_legacy(content) if role == "user" else ()), "heuristic", exc.reason), True


class Sessions:
    """``start_session`` / ``record_turn`` / ``end_session`` with the §3.2 guards, per session id."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.states: dict[str, SessionState] = {}
        self.recent: list[dict[str, str]] = []

    def _state(self, session_id: str) -> SessionState:
        if session_id not in self.states:
            self.states[session_id] = SessionState(next_turn_index(self.db, session_id))
            self.recent = []
        return self.states[session_id]

    def record(self, session_id: str, turn: Turn) -> int:
        """Store a turn (index = offset + position) and keep the last 10 messages; returns the turn index."""
        session_id = storable(session_id)  # fix: a lone surrogate in the id raised UnicodeEncodeError from sqlite3
        state = self._state(session_id)
        new_exchange = turn.role == "user" and bool(state.pending) and state.pending[-1][1].role != "user"
        if self.db.quirks.q12_session_per_exchange and new_exchange:
            self.recent = []  # Q12: the agent's start_session on the next message clears _recent_messages
        index = state.offset + len(state.pending)
        save_turn(self.db, session_id, index, turn.role, turn.content, turn.tool_calls, turn.tool_results)
        state.pending.append((index, turn, self.db.now()))
        self.recent = [*self.recent, {"role": turn.role, "content": turn.content}][-RECENT_MESSAGES:]
        return index

    def _segments(self, pending: Sequence[tuple[int, Turn, str]]) -> list[list[tuple[int, Turn, str]]]:
        if not self.db.quirks.q12_session_per_exchange:
            return [list(pending)] if pending else []
        segments: list[list[tuple[int, Turn, str]]] = []
        for entry in pending:  # the agent ends the session after each reply: a user turn after a reply starts anew
            if not segments or (entry[1].role == "user" and segments[-1][-1][1].role != "user"):
                segments.append([])
            segments[-1].append(entry)
        return segments

    def extract(self, session_id: str, model: Model | None) -> ExtractResult:
        """Real-time extraction of the pending user turns, then end of session: episode and ``cleanup_expired``."""
        session_id = storable(session_id)  # the id as record stored it
        state = self.states.get(session_id)
        if state is None or not state.pending:
            return ExtractResult(session_id, "completed", "no_turns", "model" if model is not None else "heuristic")
        ids: list[str] = []
        types: set[str] = set()
        inserted = merged = attempts = enqueued = expired = 0
        strategies: set[str] = set()
        reasons: list[str] = []
        episodes: list[str] = []
        for segment in self._segments(state.pending):
            if self.db.quirks.q12_session_per_exchange:
                state.extraction_count = 0  # Q12: start_session resets the counter on every exchange
            for index, turn, _ in segment:
                if turn.role != "user" or len(turn.content) < MIN_TURN_CHARS or state.extraction_count >= MAX_PER_SESSION:
                    continue
                state.extraction_count += 1  # counted when scheduled, not when it succeeds
                attempts += 1
                attempt, failed = run_extractor(model, "user", turn.content, turn.tool_calls, turn.tool_results,
                                                db=self.db)
                strategies.add(attempt.strategy)
                reasons += [attempt.fallback_reason] if attempt.fallback_reason else []
                if failed and not self.db.quirks.q9_failure_not_enqueued:  # fix: spec §7 Q9 — retry it at dream time
                    enqueued += enqueue(self.db, session_id, index, turn.content)
                for item in attempt.items:
                    memory_id, action = save_item(self.db, item, daily=False)
                    ids.append(memory_id)
                    saved = self.db.get_memory(memory_id)
                    types.update([str(saved["type"])] if saved else [])
                    inserted += action == "inserted"
                    merged += action == "merged"
            rows = [{"role": t.role, "content": t.content, "timestamp": ts,
                     "tool_calls": [dict(c) for c in t.tool_calls]} for _, t, ts in segment]
            episode_id, strategy, reason = generate_episode(self.db, model, rows, session_id, "session_end")
            episodes.append(episode_id)
            reasons += [reason] if reason else []
            strategies.add(strategy)
            if not self.db.quirks.q11_turns_extracted_twice:  # fix: spec §7 Q11 — the dream skips handled turns
                mark_extracted(self.db, session_id, [i for i, _, _ in segment])
            expired += self.db.cleanup_expired()
        del self.states[session_id]  # end_session: the next turn starts a new session (offset = MAX(turn_index)+1)
        strategy = "model" if strategies == {"model"} else "heuristic"
        return ExtractResult(session_id, "completed", None if attempts else "no_eligible_turns", strategy,
                             reasons[0] if reasons else None, tuple(dict.fromkeys(ids)), inserted, merged, attempts,
                             tuple(episodes), expired, enqueued, tuple(sorted(types)))
