"""Lifecycle (spec §5): ``consolidate_daily`` — unextracted turns and the queue, dedupe, decay, expiry cleanup."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final

from memory_core.model import Model
from memory_core.sqlite.db import Database
from memory_core.sqlite.episodes import generate_episode
from memory_core.sqlite.extraction import TYPES, Item, save_item
from memory_core.sqlite.retrieval import expired
from memory_core.sqlite.stamps import iso, parse_iso
from memory_core.sqlite.tables import age_days, complete, dequeue, mark_extracted, unextracted_turns

DEDUPE_THRESHOLD: Final = 0.7
DECAY_LIMIT: Final = 500
DEMOTE_BELOW: Final = 0.3
DELETE_BELOW: Final = 0.1
DELETE_MAX_ACCESS: Final = 2
TURN_BATCH: Final = 200
QUEUE_BATCH: Final = 20
PRIORITIES: Final = ("transient", "short_term", "long_term", "permanent")
TRANSIENT_TTL: Final = timedelta(days=1)


@dataclass(frozen=True, slots=True)
class Attempt:
    """One extraction attempt: items, the strategy that produced them, and the model failure if any."""

    items: tuple[Item, ...]
    strategy: str
    fallback_reason: str | None = None


Extractor = Callable[[str, str], Attempt]
"""(role, content) → attempt; the model path with the legacy fallback, supplied by the facade."""


class EnumCaseError(ValueError):
    """A row's ``type`` or ``priority`` is not a lowercase enum value (the seed's ``from_dict`` raises, Q24)."""


def check_enums(rows: Sequence[Mapping[str, Any]]) -> None:
    """Raise ``EnumCaseError`` for the first row the seed's ``SemanticMemory.from_dict`` would reject."""
    for row in rows:
        if row["type"] not in TYPES or row["priority"] not in PRIORITIES:
            raise EnumCaseError(f"memory {row['id']}: type {row['type']!r} / priority {row['priority']!r} is not a v2 enum value")


def _words(text: str) -> set[str]:
    return set(text.lower().split())


def overlap(a: str, b: str) -> float | None:
    """``|A∩B| / min(|A|,|B|)`` over lowercase whitespace words; None when either set is empty."""
    wa, wb = _words(a), _words(b)
    if not wa or not wb:
        return None
    return len(wa & wb) / min(len(wa), len(wb))


def deduplicate(db: Database) -> int:
    """Greedy per-type clustering by overlap ≥ 0.7 against the cluster's first member; keep the max, delete the rest."""
    rows = db.load_all()
    if db.quirks.q24_uppercase_rows_crash:
        check_enums(rows)
    live = [r for r in rows if not r.get("superseded_by")]
    if not db.quirks.q6_dedupe_ignores_expiry:  # fix: spec §7 Q6 — an expired row can never be the keeper
        live = [r for r in live if not expired(db, r)]
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in live:
        groups.setdefault(str(row["type"]).lower(), []).append(row)
    removed = 0
    for members in groups.values():
        assigned: set[str] = set()
        for i, first in enumerate(members):
            if first["id"] in assigned:
                continue
            assigned.add(first["id"])
            cluster = [first]
            for other in members[i + 1 :]:
                if other["id"] in assigned:
                    continue
                score = overlap(str(first["content"]), str(other["content"]))
                if score is not None and score >= DEDUPE_THRESHOLD:
                    cluster.append(other)
                    assigned.add(other["id"])
            if len(cluster) < 2:
                continue
            keeper = max(cluster, key=lambda r: (float(r["importance_score"]), int(r["access_count"]), len(str(r["content"])),
                                                 str(r["updated_at"])))
            with db.keeping(str(keeper["id"])):  # fix: spec §7 Q23 — a concurrent dedupe cannot delete every copy
                removed += sum(db.delete_memory(str(r["id"])) for r in cluster if r["id"] != keeper["id"])
    return removed


@dataclass(frozen=True, slots=True)
class DecayCounts:
    """What ``compute_decay`` did."""

    demoted: int = 0
    deleted: int = 0
    expired: int = 0

    @property
    def total(self) -> int:
        """``memories_decayed`` of the report: demoted + deleted + expired rows removed."""
        return self.demoted + self.deleted + self.expired


def effective_importance(db: Database, row: Mapping[str, Any]) -> float:
    """``importance · (1 − decay_rate)^days`` since ``last_accessed_at or updated_at``."""
    ref = row.get("last_accessed_at") or row.get("updated_at")
    raw = row.get("decay_rate")
    rate = 0.1 if raw is None else float(raw)
    return float(float(row["importance_score"]) * (1 - rate) ** age_days(db, ref))


def compute_decay(db: Database) -> DecayCounts:
    """Decay SHORT_TERM rows: delete below 0.1 (access < 2), demote below 0.3; then ``cleanup_expired``."""
    if db.quirks.q1_decay_priority_case:
        rows = db.query(priority="SHORT_TERM", limit=DECAY_LIMIT)  # stored values are lowercase: selects nothing
    else:  # fix: spec §7 Q1 — both spellings, as upstream 09097b2f1
        rows = db.query(priority="short_term", limit=DECAY_LIMIT) + db.query(priority="SHORT_TERM", limit=DECAY_LIMIT)
        rows = rows[:DECAY_LIMIT]
    demoted = deleted = 0
    for row in rows:
        effective = effective_importance(db, row)
        if effective < DELETE_BELOW and int(row["access_count"] or 0) < DELETE_MAX_ACCESS:
            deleted += db.delete_memory(str(row["id"]))
        elif effective < DEMOTE_BELOW:
            if not db.quirks.q8_demotion_keeps_expiry:  # fix: spec §7 Q8 — a demoted row gets the transient TTL
                limit = db.now_naive() + TRANSIENT_TTL
                current = parse_iso(row.get("expires_at"))
                # fix: the expiry is committed before the priority: a crash between the two commits leaves a
                # short_term row that the next decay selects and demotes again, never a transient row without expiry
                db.set_expiry(str(row["id"]), iso(min(limit, current) if current else limit))
            db.update_memory(str(row["id"]), {"priority": "transient", "importance_score": effective})
            demoted += 1
    return DecayCounts(demoted, deleted, db.cleanup_expired())


def process_unextracted(db: Database, model: Model | None, extract: Extractor) -> tuple[int, int, list[str]]:
    """Episode + extraction of every unextracted turn (grouped by session), then one queue batch.

    Returns (items saved, episodes made, fallback reasons seen).
    """
    turns = unextracted_turns(db, TURN_BATCH)
    sessions: dict[str, list[dict[str, Any]]] = {}
    for turn in turns:
        sessions.setdefault(str(turn["session_id"]), []).append(turn)
    saved, episodes, reasons = 0, 0, []
    for session_id, session_turns in sessions.items():
        episode_id, _, reason = generate_episode(db, model, session_turns, session_id, "daily_consolidation")
        episodes += 1
        reasons += [reason] if reason else []
        for turn in session_turns:
            attempt = extract(str(turn["role"]), str(turn["content"] or ""))
            reasons += [attempt.fallback_reason] if attempt.fallback_reason else []
            for item in attempt.items:
                save_item(db, item, daily=True, episode_id=episode_id)
                saved += 1
        mark_extracted(db, session_id, [t["turn_index"] for t in session_turns])  # fix: as stored (a blob raised)
    for row in dequeue(db, QUEUE_BATCH):
        attempt = extract("user", str(row["content"]))
        reasons += [attempt.fallback_reason] if attempt.fallback_reason else []
        for item in attempt.items:
            save_item(db, item, daily=True)
            saved += 1
        if db.quirks.q10_queue_loses_work:
            complete(db, int(row["id"]), success=bool(attempt.items))  # empty → failed, terminal
        else:  # fix: spec §7 Q10 — "nothing to remember" completes; a model failure is retried while retries remain
            failed = attempt.fallback_reason is not None and not attempt.items
            retry = failed and int(row["retry_count"]) + 1 < int(row["max_retries"])
            complete(db, int(row["id"]), success=not failed, retry=retry)
    return saved, episodes, reasons
