"""Extraction (spec §3.3–§3.7): the model call, reply parsing, item → row with retention, the legacy keyword extractor."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final

from memory_core.errors import ModelError
from memory_core.model import Message, Model, ModelRequest
from memory_core.sqlite.db import Database
from memory_core.sqlite.fts import search_semantic
from memory_core.sqlite.stamps import iso
from memory_core.sqlite.templates import render

EXTRACT_PURPOSE: Final = "sqlite-memory-extract"
EXTRACT_TIMEOUT_S: Final = 30.0
EXTRACT_SCHEMA: Final = {"type": "object", "properties": {"items": {"type": "array"}}, "required": ["items"]}
MAX_CONTENT_CHARS: Final = 2000
"""Port guard for oversized items (the seed has none): longer content is cut, never rejected."""
MAX_ITEMS: Final = 20
"""Port guard: the prompt asks for at most 3 items and the seed's parser enforces nothing; a runaway reply is cut."""
DURATIONS: Final[Mapping[str, timedelta | None]] = {
    "permanent": None, "7d": timedelta(days=7), "24h": timedelta(hours=24), "session": timedelta(hours=2)}
PRIORITY_TTL: Final[Mapping[str, timedelta | None]] = {
    "transient": timedelta(days=1), "short_term": timedelta(days=3), "long_term": timedelta(days=30), "permanent": None}
DEFAULT_DURATION: Final = {"RULE": "24h", "PREFERENCE": "permanent", "SKILL": "permanent", "ERROR": "7d", "FACT": "permanent"}
TYPES: Final = ("fact", "preference", "skill", "context", "rule", "error", "persona_trait")
_KEY_PARAMS: Final = ("command", "path", "query", "url", "content", "filename")
_ARRAY: Final = re.compile(r"\[[\s\S]*\]")
_WIN_PATH: Final = re.compile(r"[A-Za-z]:\\\\[^\s]{3,}")


@dataclass(frozen=True, slots=True)
class Item:
    """One parsed extraction item (spec §3.4)."""

    type: str
    subject: str
    predicate: str
    content: str
    importance: float
    duration: str
    is_update: bool = False
    update_hint: str = ""


def _item(raw: Mapping[str, Any]) -> Item | None:
    content = raw.get("content", "")
    if not isinstance(content, str):
        raise TypeError(f"content must be a string, got {type(content).__name__}")
    if len(content.strip()) < 5:
        return None
    for key in ("type", "subject", "predicate", "update_hint"):  # fix: a list or object was stored as its Python repr
        if isinstance(raw.get(key), list | Mapping):
            raise TypeError(f"{key} must be text, got {type(raw.get(key)).__name__}")
    kind = str(raw.get("type") or "FACT").upper()
    duration = str(raw.get("duration") or "")
    if duration not in DURATIONS:
        duration = DEFAULT_DURATION.get(kind, "permanent")
    importance = raw.get("importance", 0.5)
    if isinstance(importance, bool) or not isinstance(importance, int | float | str):
        raise TypeError(f"importance must be a number, got {importance!r}")
    value = float(importance)
    if value != value:  # NaN (round 20b: checked after the clamp, which turns NaN into 0.1, so "nan" was stored)
        raise ValueError("importance is NaN")
    value = min(1.0, max(0.1, value))
    return Item(kind, str(raw.get("subject") or "").strip(), str(raw.get("predicate") or "").strip(),
                content.strip()[:MAX_CONTENT_CHARS], value, duration, bool(raw.get("is_update", False)),
                str(raw.get("update_hint") or "").strip())


def parse_items(text: str, data: Mapping[str, Any] | None, *, none_substring: bool, bad_item_drops_batch: bool) -> list[Item]:
    """Parse a reply (spec §3.4). Seed: ``NONE`` anywhere in the text → ``[]`` (Q9); greedy ``[...]``; one bad item
    loses the batch (Q9). Fixed: only a bare ``NONE`` means none; a bad item is skipped alone."""
    if not text.strip():
        return []
    if none_substring:
        if "NONE" in text.upper():
            return []
    elif text.strip().upper() == "NONE":  # fix: spec §7 Q9 — "NoneType" or "nonetheless" in content is not NONE
        return []
    raw: Any = data.get("items") if data is not None and not none_substring else None
    if not isinstance(raw, list):
        match = _ARRAY.search(text)
        try:
            raw = json.loads(match.group(0)) if match else None
        except json.JSONDecodeError:
            return []
    if not isinstance(raw, list):
        return []
    items: list[Item] = []
    for entry in raw:
        if not isinstance(entry, Mapping):
            continue
        try:
            item = _item(entry)
        except (TypeError, ValueError):
            if bad_item_drops_batch:
                return []  # the seed's single try block loses the whole batch
            continue  # fix: spec §7 Q9 — skip only the bad item
        if item is not None:
            items.append(item)
    return items[:MAX_ITEMS]


def tool_context(tool_calls: Sequence[Mapping[str, Any]],
                 tool_results: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """Up to 5 calls ``name(key params)`` cut to 200 characters, and 3 results cut to 150 (spec §3.3)."""
    calls = []
    for call in list(tool_calls)[:5]:
        params = call.get("input") or call.get("arguments") or {}
        keys = {k: params[k] for k in _KEY_PARAMS if isinstance(params, Mapping) and k in params}
        calls.append(f"{call.get('name', '?')}({json.dumps(keys, ensure_ascii=False)})"[:200])
    results = []
    for result in list(tool_results)[:3]:
        prefix = "错误" if result.get("is_error") else "结果"
        results.append(f"{prefix}: {result.get('content', '')}"[:150])
    return calls, results


def extract_with_model(model: Model, role: str, content: str, tool_calls: Sequence[Mapping[str, Any]] = (),
                       tool_results: Sequence[Mapping[str, Any]] = (), *, none_substring: bool,
                       bad_item_drops_batch: bool) -> list[Item]:
    """One extraction call (spec §3.3); raises ``ModelError`` when the model fails."""
    calls, results = tool_context(tool_calls, tool_results)
    system = render("extract_system")
    user = render("extract_user", role=role, content=content, tool_calls=calls, tool_results=results, context="")
    request = ModelRequest(EXTRACT_PURPOSE, (Message("system", system.text), Message("user", user.text)), EXTRACT_SCHEMA,
                           EXTRACT_TIMEOUT_S, f"{system.version}+{user.version}", max_tokens=1024)
    try:
        reply = model.query(request)
    except ModelError as exc:
        if exc.reason == "invalid_json" and "'NONE'" in str(exc).upper():
            return []  # the literal NONE answer (the seam only carries JSON objects)
        raise
    return parse_items(reply.text, reply.data, none_substring=none_substring, bad_item_drops_batch=bad_item_drops_batch)


# ----------------------------------------------------------------------------------------------- legacy (§3.7)
_PREF_CUES: Final = ("我喜欢", "我更喜欢", "我习惯", "我偏好", "请以后", "以后请",
                     "i prefer", "i like", "i love", "i usually", "from now on")
_RULE_CUES: Final = ("永远不要", "不要", "必须", "禁止", "务必", "never ", "don't ", "do not ", "always ", "must ")
_STRONG_RULE: Final = ("永远不要", "never ")


def extract_legacy(content: str) -> list[Item]:
    """The v1 keyword extractor (spec §3.7), labelled legacy: user text of ≥ 10 characters, at most 2 items.

    Extension: the seed's cue words are Chinese only; the English equivalents are added so English stores get a
    heuristic path at all (the same in both modes).
    """
    text = content.strip()
    if len(text) < 10:
        return []
    lower = f"{text.lower()} "
    items: list[Item] = []
    if any(cue in lower for cue in _PREF_CUES):
        items.append(Item("PREFERENCE", "用户", "偏好", text[:200], 0.7, "permanent"))
    if any(cue in lower for cue in _RULE_CUES):
        items.append(Item("RULE", "用户", "规则", text[:200], 0.8 if any(c in lower for c in _STRONG_RULE) else 0.7, "permanent"))
    path = _WIN_PATH.search(text)
    if path and len(items) < 2:
        items.append(Item("FACT", "用户", "路径", f"用户提到路径: {path.group(0)}", 0.6, "permanent"))
    return items[:2]


# ------------------------------------------------------------------------------------------------- item → row (§3.5)
def priority_for(item: Item) -> str:
    """≥ 0.85 or RULE → permanent; ≥ 0.6 → long_term; else short_term."""
    if item.importance >= 0.85 or item.type == "RULE":
        return "permanent"
    return "long_term" if item.importance >= 0.6 else "short_term"


def retention(db: Database, duration: str | None, priority: str) -> str | None:
    """``_apply_retention``: the duration map if the duration is known, else the priority TTL."""
    delta = DURATIONS[duration] if duration is not None and duration in DURATIONS else PRIORITY_TTL.get(priority)
    return None if delta is None else iso(db.now_naive() + delta)


def find_similar(db: Database, subject: str, predicate: str) -> dict[str, Any] | None:
    """Stage (a): exact subject, predicate case-insensitive; stage (b): FTS "subject predicate", score > 0.8 (Q4)."""
    for row in db.query(subject=subject, limit=10):
        if str(row["predicate"]).lower() == predicate.lower():
            return row
    for hit in search_semantic(db, f"{subject} {predicate}", 5):
        if hit.score > 0.8 and str(hit.row["subject"]).lower() == subject.lower():
            return hit.row
    return None


def save_item(db: Database, item: Item, *, daily: bool, episode_id: str | None = None) -> tuple[str, str]:
    """Store one item (real-time or daily variant); returns (memory id, ``merged`` | ``inserted``)."""
    with db.atomic("save item"):  # fix: spec §7 Q23 — the similar-row check and the write it decides, together
        return _save_item(db, item, daily=daily, episode_id=episode_id)


def _save_item(db: Database, item: Item, *, daily: bool, episode_id: str | None) -> tuple[str, str]:
    if item.is_update:
        target = find_similar(db, item.subject, item.predicate)
        if target is not None:
            changes: dict[str, Any] = {"content": item.content,
                                       "importance_score": max(float(target["importance_score"]), item.importance)}
            if daily:
                changes["confidence"] = min(1.0, float(target["confidence"]) + 0.1)
            db.update_memory(str(target["id"]), changes)
            return str(target["id"]), "merged"
    kind = item.type.lower() if item.type.lower() in TYPES and item.type.lower() != "context" else "fact"
    priority = priority_for(item)
    row: dict[str, Any] = {
        "id": db.new_id(), "type": kind, "priority": priority, "content": item.content, "subject": item.subject,
        "predicate": item.predicate, "importance_score": item.importance, "tags": [item.type.lower()],
        "source": "daily_consolidation" if daily else "realtime_extraction", "source_episode_id": episode_id if daily else None,
    }
    if not daily or not db.quirks.q7_daily_no_retention:  # fix: spec §7 Q7 — the daily path applies retention too
        row["expires_at"] = retention(db, item.duration, priority)
    return db.save_memory(row), "inserted"
