"""``SqliteMemory``: the SQLite + FTS5 memory (OpenAkita memory v2) behind one facade a harness adapter can map."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from memory_core.clock import Clock, monotonic_ms
from memory_core.events import DreamEvent, EventSink, ExtractEvent, ForgetEvent, NullSink, RecallEvent
from memory_core.model import Model
from memory_core.sqlite.db import BUSY_TIMEOUT_MS, Database
from memory_core.sqlite.extraction import DURATIONS, TYPES, retention
from memory_core.sqlite.fts import search_semantic
from memory_core.sqlite.lifecycle import EnumCaseError, compute_decay, deduplicate, process_unextracted
from memory_core.sqlite.quirks import Quirks
from memory_core.sqlite.render import inject_index, read_index, render_memory_md, render_user_md, write_atomic
from memory_core.sqlite.retrieval import (
    Candidate,
    Decomposer,
    match_keywords,
    retrieve_candidates,
    substring_search,
    typed_search,
)
from memory_core.sqlite.session import ExtractResult, Sessions, Turn, manual_fields, run_extractor, storable
from memory_core.sqlite.stamps import iso
from memory_core.sqlite.tables import enqueue, list_episodes, queue_rows, search_turns

STRATEGIES: Final = ("heuristic", "model", "bm25")
"""``heuristic``: rule decomposition; ``model``: LLM decomposition; ``bm25``: path B alone (FTS, bm25 order)."""
PATHS: Final = ("candidates", "typed", "cascade")
FORGET_MAX_DELETE: Final = 50
FORGET_HARD_CAP: Final = 200
FORGET_WORDS: Final = frozenset({"forget", "remove", "delete", "erase", "drop", "please", "about", "memory", "memories",
                                 "remember", "remembering", "stop", "anything", "everything", "know", "that", "my"})
"""Request words the fixed forget matcher drops before requiring every remaining keyword."""
TYPE_ALIASES: Final = {"user": "preference", "feedback": "rule", "project": "fact", "reference": "fact"}
"""File-core memory types → v2 types, for records seeded from the portable scenarios."""
FILE_TYPES: Final = {"preference": "user", "persona_trait": "user", "rule": "feedback", "error": "feedback",
                     "skill": "reference", "fact": "project", "context": "project"}
"""v2 types → the nearest file-core type (a seeded record keeps its original type)."""
CAPABILITIES: Final = frozenset({"dream", "recall_prompt"})
"""The harness protocol's capability names this system has. It lacks ``file_index`` (its MEMORY.md has its own caps,
not the file spec's), ``file_paths``, ``raw_files``, ``dream_gates``, ``locks``, ``extract_queue``, ``memory_tool``,
``stray_files``."""


@dataclass(frozen=True, slots=True)
class DreamResult:
    """What one ``dream`` (``consolidate_daily``) did: ``updated`` | ``noop`` | ``failed`` and the report counters."""

    status: str
    reason: str | None
    counts: Mapping[str, int]
    strategy: str = "heuristic"
    fallback_reason: str | None = None
    started_at: str = ""
    finished_at: str = ""


@dataclass(frozen=True, slots=True)
class RecallResult:
    """Ranked candidates with provenance, the strategy that ran, and the text the agent would see."""

    query: str
    items: tuple[Candidate, ...]
    strategy: str
    fallback_reason: str | None
    prompt_text: str
    path: str
    keywords: tuple[str, ...] = ()
    intent: str = "general"
    enhanced_query: str = ""


@dataclass(frozen=True, slots=True)
class ForgetResult:
    """Candidates the path-B matcher found and the ids actually deleted (none on a dry run)."""

    query: str
    candidates: tuple[str, ...]
    removed: tuple[str, ...]
    dry_run: bool = False


@dataclass(frozen=True, slots=True)
class Document:
    """A plain record: one ``memories`` row."""

    id: str
    type: str
    """The v2 type (``fact``, ``preference``, ``rule``, ``skill``, ``error``, ...)."""
    title: str
    text: str
    created_at: str
    updated_at: str
    source: Mapping[str, Any] = field(default_factory=dict)
    """The whole row."""
    description: str = ""
    file_type: str = ""
    """The record's original file-core type when it was seeded with one, else the nearest (``FILE_TYPES``)."""
    source_ref: str = ""
    """``memories:<rowid>``."""


def _utf8(text: str) -> str:
    """Query text SQLite can bind: a lone surrogate (not UTF-8 encodable) becomes ``?``, which matches no word."""
    return text.encode("utf-8", "replace").decode("utf-8")


def _stamp(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return iso(value) if isinstance(value, datetime) else iso(datetime.fromisoformat(str(value)))


class SqliteMemory:
    """The port's public API; every timestamp comes from ``clock`` and every model call goes through ``model``."""

    capabilities: Final = CAPABILITIES

    def __init__(self, db_path: str | Path, clock: Clock, model: Model | None = None, quirks: Quirks | None = None,
                 events: EventSink | None = None, *, identity_dir: str | Path | None = None,
                 busy_timeout_ms: int = BUSY_TIMEOUT_MS, id_factory: Callable[[], str] | None = None) -> None:
        self.quirks = quirks if quirks is not None else Quirks.fixed()
        self.db = Database(Path(db_path), clock, self.quirks, busy_timeout_ms=busy_timeout_ms, id_factory=id_factory)
        self.model = model
        self.events: EventSink = events or NullSink()
        path = Path(db_path)
        self.identity_dir = Path(identity_dir) if identity_dir is not None else path.parent / f"{path.stem}-identity"
        self.sessions = Sessions(self.db)
        self.decomposer = Decomposer(model, context_in_key=not self.quirks.q21_decompose_cache_ignores_context)

    def close(self) -> None:
        """Close the database."""
        self.db.close()

    # ------------------------------------------------------------------------------------------------------ writes
    def seed(self, records: Iterable[Mapping[str, Any]]) -> list[str]:
        """Insert fixture records as-is (timestamps kept, spec Q14); returns their ids.

        Keys: ``content``/``text``, ``type`` (file-core types are mapped), ``importance``, ``subject`` (else ``title``),
        ``predicate``, ``priority``, ``tags``, ``source``, ``id``, ``created_at``, ``updated_at``, ``expires_at`` or a
        ``duration`` (``permanent``/``7d``/``24h``/``session``), and ``description``/``path``/``facts`` (kept in
        ``metadata`` with the original type). No expiry unless one is given.
        """
        ids = []
        for record in records:
            content = record.get("content", record.get("text"))
            if not isinstance(content, str) or not content.strip():
                raise ValueError(f"seed record needs a non-empty string 'content' or 'text': {dict(record)!r:.120}")
            content = storable(content)  # fix: a lone surrogate raised UnicodeEncodeError from sqlite3
            origin = str(record.get("type") or "fact").lower()
            kind = TYPE_ALIASES.get(origin, origin if origin in TYPES else "fact")
            meta = {"origin_type": origin, **{k: record[k] for k in ("description", "path", "facts") if record.get(k)}}
            try:
                importance = float(record.get("importance", record.get("importance_score", 0.5)))
            except (TypeError, ValueError, OverflowError):  # fix: 10**400 raised OverflowError
                raise ValueError(f"seed record {content[:40]!r}: importance must be a number") from None
            priority = storable(str(record.get("priority") or ("permanent" if importance >= 0.8 else  # fix: a lone
                                                                "long_term" if importance >= 0.6 else "short_term")))
            expires = _stamp(record.get("expires_at"))
            if expires is None and record.get("duration") in DURATIONS:
                expires = retention(self.db, str(record["duration"]), priority)
            row = {"content": content, "type": kind, "priority": priority, "importance_score": importance,
                   "subject": storable(str(record.get("subject", record.get("title", "")) or "")),
                   "predicate": storable(str(record.get("predicate") or "")), "tags": list(record.get("tags") or [kind]),
                   "source": storable(str(record.get("source") or "manual")), "expires_at": expires, "metadata": meta,
                   "created_at": _stamp(record.get("created_at")) or self.db.now(),
                   "updated_at": _stamp(record.get("updated_at") or record.get("created_at"))}
            if record.get("id"):
                row["id"] = storable(str(record["id"]))  # surrogate in a priority, source or id raised UnicodeEncodeError
            ids.append(self.db.save_memory(row, keep_timestamps=True))
        return ids

    def add_memory(self, content: str, memory_type: str = "fact", importance: float = 0.5) -> str:
        """The manual tool (spec §3.6): ≥ 0.8 permanent, ≥ 0.6 long_term; priority TTL; ``""`` for a duplicate."""
        text, kind, importance = manual_fields(content, memory_type, importance)  # storable: a lone surrogate raised
        if any(str(r["content"]).strip().lower() == text.lower() for r in self.db.load_all()):
            return ""
        priority = "permanent" if importance >= 0.8 else "long_term" if importance >= 0.6 else "short_term"
        return self.db.save_memory({"content": text, "type": kind, "priority": priority, "importance_score": importance,
                                    "tags": [kind], "source": "manual", "expires_at": retention(self.db, None, priority)})

    def add_turns(self, session_id: str, turns: Sequence[object]) -> list[int]:
        """Record turns of a session (``start_session`` on a new id): ``Turn``s, mappings or objects with ``kind``/``text``."""
        parsed = [Turn.of(t) for t in turns]
        return [self.sessions.record(session_id, t) for t in parsed]

    def _model_for(self, strategy: str | None) -> tuple[Model | None, str | None]:
        """The model a strategy uses (``heuristic``: none) and the fallback reason when ``model`` has none."""
        if strategy == "heuristic":
            return None, None
        if strategy == "model" and self.model is None:
            return None, "no_model"
        return self.model, None

    def extract(self, session_id: str, strategy: str | None = None) -> ExtractResult:
        """Real-time extraction over the session's new turns, then ``end_session`` (episode, ``cleanup_expired``).

        ``strategy``: ``model`` (the default when a model is set) or ``heuristic`` (the legacy keyword extractor).
        """
        start = monotonic_ms()
        model, missing = self._model_for(strategy)
        result = self.sessions.extract(session_id, model)
        if missing and result.fallback_reason is None:
            result = replace(result, fallback_reason=missing)
        self.events.emit(ExtractEvent(session_id, result.status, monotonic_ms() - start, result.strategy, "auto",
                                      None, result.touched, result.fallback_reason, None, len(result.memory_ids)))
        return result

    def dream(self, *, force: bool = False, strategy: str | None = None) -> DreamResult:
        """``consolidate_daily``: turns and queue, dedupe, decay and cleanup, ``MEMORY.md``, ``USER.md``.

        The seed has no gate beyond its scheduler, so ``force`` changes nothing.
        """
        del force
        model, missing = self._model_for(strategy)
        start, started = monotonic_ms(), self.db.now()
        counts = {"unextracted_processed": 0, "episodes": 0, "duplicates_removed": 0, "memories_decayed": 0,
                  "demoted": 0, "decay_deleted": 0, "expired_removed": 0, "stale_attachments_cleaned": 0,
                  "memory_md_written": 0, "user_md_written": 0}
        status, reason, fallback = "updated", None, None
        try:
            saved, episodes, reasons = process_unextracted(
                self.db, model, lambda role, content: run_extractor(model, role, content, db=self.db)[0])
            counts.update(unextracted_processed=saved, episodes=episodes)
            fallback = reasons[0] if reasons else missing
            counts["duplicates_removed"] = deduplicate(self.db)
            decay = compute_decay(self.db)
            counts.update(memories_decayed=decay.total, demoted=decay.demoted, decay_deleted=decay.deleted,
                          expired_removed=decay.expired)
            counts["memory_md_written"], counts["user_md_written"] = self._refresh_files()
        except EnumCaseError as exc:  # Q24: the seed's lifecycle raises after step 1 (and falls back to the legacy job)
            status, reason = "failed", f"{self.db.path}: consolidation aborted: {exc}"
        if status != "failed" and not any(v for k, v in counts.items() if not k.endswith("_written")):
            status = "noop"
        ran = "model" if model is not None and fallback is None else "heuristic"
        self.events.emit(DreamEvent("", status, monotonic_ms() - start, ran, "manual", None, (), fallback, reason,
                                    counts["duplicates_removed"]))
        return DreamResult(status, reason, counts, ran, fallback, started, self.db.now())

    def _refresh_files(self) -> tuple[int, int]:
        text = render_memory_md(self.db.query(min_importance=0.5, limit=100), empty_headers=self.quirks.q18_index_tail_kept)
        memory_written = user_written = 0
        if text is not None:
            write_atomic(self.identity_dir / "MEMORY.md", text, backup=True)
            memory_written = 1
        profile = render_user_md(self.db)
        if profile is not None:
            write_atomic(self.identity_dir / "USER.md", profile, backup=not self.quirks.q19_user_md_chinese_subject)
            user_written = 1
        return memory_written, user_written

    # -------------------------------------------------------------------------------------------------- fixtures
    def plant_queue_row(self, session_id: str, content: str, *, status: str, last_attempted_at: datetime) -> None:
        """A fixture: an extraction-queue row in ``pending`` or ``processing`` (a crashed worker), last tried then."""
        if status not in ("pending", "processing"):
            raise ValueError(f"queue row status must be pending or processing, got {status!r}")
        index = sum(1 for r in queue_rows(self.db) if r["session_id"] == session_id)
        enqueue(self.db, session_id, index, content)
        with self.db.guard("plant queue row") as conn:
            conn.execute("UPDATE extraction_queue SET status=?, last_attempted_at=? WHERE session_id=? AND turn_index=?",
                         (status, iso(last_attempted_at), session_id, index))
            conn.commit()

    def queue_count(self, status: str) -> int:
        """Extraction-queue rows with ``status``."""
        return sum(1 for r in queue_rows(self.db) if r["status"] == status)

    def episode_count(self) -> int:
        """Episodes stored."""
        return len(list_episodes(self.db))

    # ------------------------------------------------------------------------------------------------------- reads
    def recall(self, query: str, k: int = 20, strategy: str = "heuristic", *, path: str = "candidates",
               memory_type: str | None = None, recent_messages: Sequence[Mapping[str, str]] | None = None,
               excluded: Sequence[str] = ()) -> RecallResult:
        """``retrieve_candidates`` (path A), the typed search (path B) or the tool's A→B→C cascade.

        ``excluded`` ids never appear (they are dropped before the cut to ``k``); episodes are candidates too
        (their ids are episode uuids). Strategy ``bm25`` means path B alone.
        """
        if strategy not in STRATEGIES or path not in PATHS:
            raise ValueError(f"recall strategy must be one of {STRATEGIES} and path one of {PATHS}, got {strategy!r}/{path!r}")
        if strategy == "bm25":
            path = "typed"
        query = _utf8(query)  # fix: a lone surrogate in the query raised UnicodeEncodeError from sqlite3
        start = monotonic_ms()
        recent = list(self.sessions.recent if recent_messages is None else recent_messages)
        fallback = "no_model" if strategy == "model" and self.model is None else None
        items: list[Candidate] = []
        keywords: tuple[str, ...] = ()
        intent, enhanced, used, ran = "general", "", path, "heuristic"
        if path in ("candidates", "cascade") and not (path == "cascade" and memory_type):
            items, decomposition, enhanced = retrieve_candidates(self.db, self.decomposer, query, recent, limit=10_000,
                                                                 use_model=strategy == "model")
            keywords, intent, ran = decomposition.keywords, decomposition.intent, decomposition.strategy
            fallback = fallback or decomposition.fallback_reason
            used = "candidates"
        if path == "typed" or (path == "cascade" and not items):
            items, used = typed_search(self.db, query, memory_type), "typed"
        if path == "cascade" and not items:
            items, used = substring_search(self.db, query), "substring"
        if strategy == "bm25":
            ran = "bm25"
        skip = set(excluded)
        items = [c for c in items if c.memory_id not in skip][: max(k, 0)]
        self._bump_access(items)
        text = self._prompt_text(query, items, used)
        self.events.emit(RecallEvent("", len(query), ran, monotonic_ms() - start, fallback, len(items), len(items),
                                     tuple(c.memory_id for c in items), 0, items[0].score if items else None))
        return RecallResult(query, tuple(items), ran, fallback, text, used, keywords, intent, enhanced)

    def _bump_access(self, items: Sequence[Candidate]) -> None:
        if self.quirks.q13_access_tracking_dead:
            return
        for cand in items:  # fix: spec §7 Q13 — recall is an access
            if cand.source_type in ("semantic", "recent"):
                row = self.db.get_memory(cand.memory_id)
                if row is None:
                    continue
                changes: dict[str, Any] = {"access_count": int(row["access_count"]) + 1, "last_accessed_at": self.db.now()}
                if not self.quirks.q14_updated_at_any_write:  # fix: spec §7 Q14 — bookkeeping is not a content write
                    changes["updated_at"] = row["updated_at"]
                self.db.update_memory(cand.memory_id, changes)

    @staticmethod
    def _prompt_text(query: str, items: Sequence[Candidate], path: str) -> str:
        if not items:
            return f"未找到与 '{query}' 相关的记忆"
        if path == "candidates":
            return "\n".join(f"[{c.source_type}] {c.content[:200]}" for c in items[:10])
        return "\n".join(f"[{c.memory_type}] {c.row.get('content', c.content)} (importance {c.importance_score:.2f}, "
                         f"access {c.row.get('access_count', 0)})" for c in items[:10])

    def forget(self, query: str, *, dry_run: bool = False, memory_type: str | None = None,
               max_delete: int = FORGET_MAX_DELETE, rerender: bool = True) -> ForgetResult:
        """Select with the path-B matcher, preview, delete each id, re-render ``MEMORY.md`` (spec §8.1).

        Seed: the seed sanitiser ORs every token. fix: spec §7 Q2 — the fixed matcher requires every keyword.
        """
        query = _utf8(query)  # fix: a lone surrogate in the query raised UnicodeEncodeError from sqlite3
        start = monotonic_ms()
        limit = max(0, min(max_delete, FORGET_HARD_CAP))
        if self.quirks.q2_fts_sanitiser:
            hits = search_semantic(self.db, query, limit, memory_type)
        else:
            keywords = match_keywords(query, FORGET_WORDS)
            hits = search_semantic(self.db, " ".join(keywords), limit, memory_type, join="AND") if keywords else []
        candidates = tuple(str(h.row["id"]) for h in hits)
        removed = () if dry_run else tuple(i for i in candidates if self.db.delete_memory(i))
        if removed and rerender:
            self._refresh_files()
        self.events.emit(ForgetEvent("", len(query), "heuristic", monotonic_ms() - start, None, len(candidates), len(removed)))
        return ForgetResult(query, candidates, removed, dry_run)

    def documents(self) -> list[Document]:
        """Every memory row as a plain record, oldest first."""
        out = []
        for row in sorted(self.db.load_all(), key=lambda r: (str(r["created_at"]), str(r["id"]))):
            title = f"{row['subject']}: {row['predicate']}".strip(": ") if row.get("subject") else str(row["content"])[:60]
            raw_meta = row.get("metadata")
            meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, Mapping) else {}
            kind = str(row["type"])
            out.append(Document(str(row["id"]), kind, title, str(row["content"]), str(row["created_at"]),
                                str(row["updated_at"]), row, str(meta.get("description") or ""),
                                str(meta.get("origin_type") or FILE_TYPES.get(kind.lower(), "project")),
                                f"memories:{row.get('_rowid')}"))
        return out

    def index_text(self) -> str:
        """The rendered ``MEMORY.md`` (``.bak`` if missing or empty, ``""`` before the first dream)."""
        return read_index(self.identity_dir / "MEMORY.md")

    def injected_index(self) -> str:
        """``MEMORY.md`` as the prompt builder injects it: ≤ 900 characters (seed keeps the tail, Q18)."""
        return inject_index(self.index_text(), keep_tail=self.quirks.q18_index_tail_kept)

    def user_profile_text(self) -> str:
        """The rendered ``USER.md`` or ``""``."""
        return read_index(self.identity_dir / "USER.md")

    def search_traces(self, keyword: str, *, session_id: str | None = None, max_results: int = 10,
                      days_back: int = 7) -> list[dict[str, Any]]:
        """``search_conversation_traces`` source 1 (spec §4.6): turns within ``days_back``, newest first."""
        if not keyword.strip():
            raise ValueError("search_traces needs a non-empty keyword")
        keyword, session_id = _utf8(keyword), None if session_id is None else storable(session_id)  # fix: lone surrogates
        return search_turns(self.db, keyword, days_back=days_back, session_id=session_id, max_results=max_results)

    def fts_integrity(self) -> str | None:
        """None when the FTS index matches ``memories`` (FTS5 ``integrity-check``), else SQLite's message."""
        return self.db.fts_integrity()
