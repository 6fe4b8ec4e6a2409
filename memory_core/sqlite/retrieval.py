"""Retrieval (spec §4.1–§4.2): query decomposition, the enhanced query, four recall paths, merge and weighted rerank."""

from __future__ import annotations

import math
import re
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from memory_core.errors import ModelError
from memory_core.model import Message, Model, ModelRequest
from memory_core.sqlite.db import Database
from memory_core.sqlite.fts import fts_words, search_semantic
from memory_core.sqlite.stamps import parse_iso
from memory_core.sqlite.tables import age_days, search_episodes
from memory_core.sqlite.templates import render

DECOMPOSE_PURPOSE: Final = "sqlite-memory-decompose"
DECOMPOSE_TIMEOUT_S: Final = 10.0
DECOMPOSE_SCHEMA: Final = {"type": "object", "properties": {"keywords": {"type": "array"}, "intent": {"type": "string"}},
                           "required": ["keywords"]}
INTENTS: Final = ("search_memory", "search_file", "general")
W_RELEVANCE, W_RECENCY, W_IMPORTANCE, W_ACCESS = 0.4, 0.25, 0.2, 0.15
RELEVANCE: Final = {"semantic": 0.8, "episode": 0.6, "recent": 0.5, "attachment": 0.85}
CACHE_LIMIT: Final = 256
FILE_HINTS: Final = ("图片", "照片", "图", "文件", "文档", "视频", "音频", "语音",
                     "photo", "image", "file", "video", "audio", "document")
_STOP_TEXT: Final = (
    "的 了 吗 呢 吧 啊 是 在 有 和 与 我 你 他 她 它 这 那 什么 怎么 哪 给我 帮我 请 看看 找到 告诉我 "
    "the a an is are was were be been what how who when where which why do does did i you he she it we they my your "
    "me of to in on at for with and or not this that these those can could would should will about")
STOP_WORDS: Final = frozenset(_STOP_TEXT.split())
ACTION_WORDS: Final = ("打开", "关闭", "运行", "执行", "安装", "部署", "启动", "停止", "创建",
                       "删除", "修改", "搜索", "下载", "上传", "去", "进入", "访问")
_WIN_PATH: Final = re.compile(r"[A-Za-z]:\\[^\s]+")
# fix: the lookbehind starts a match only where a run of [\w.-] starts (findall's results are the same: the greedy
# run reaches its last extension), so a long run without one costs linear, not quadratic, time
_FILENAME: Final = re.compile(r"(?<![\w.-])[\w.-]+\.(?:py|js|ts|md|json|yaml|toml|jpg|png|pdf|docx|mp4|mp3)\b", re.IGNORECASE)
_EPISODE_FILE: Final = re.compile(r"(?<![\w.-])[\w.-]+\.(?:py|js|ts|md|json|yaml|toml)\b", re.IGNORECASE)
_SPLIT: Final = re.compile(r"[\s!-/:-@\[-`{-~\u3000-\u303f\uff00-\uffef，。！？；：、]+")


@dataclass(frozen=True, slots=True)
class Decomposition:
    """Keywords and intent for a query, and how they were obtained."""

    keywords: tuple[str, ...]
    intent: str
    strategy: str = "heuristic"
    fallback_reason: str | None = None


@dataclass(frozen=True, slots=True)
class Candidate:
    """One ranked recall candidate with its provenance (spec §8.1 recall)."""

    memory_id: str
    source_type: str
    memory_type: str
    content: str
    relevance: float
    recency_score: float
    importance_score: float
    access_frequency_score: float
    score: float = 0.0
    row: Mapping[str, Any] = field(default_factory=dict)


def decompose_rules(query: str) -> Decomposition:
    """Rule decomposition: file-hint intent, paths, filenames, then non-stop-word tokens (≤ 6, case-insensitively unique)."""
    text = query.strip()
    lower = text.lower()
    intent = "search_file" if any(h in lower for h in FILE_HINTS) else "general"
    found = [*_WIN_PATH.findall(text), *_FILENAME.findall(text)]
    found += [t for t in _SPLIT.split(text) if len(t) >= 2 and t.lower() not in STOP_WORDS]
    unique: dict[str, str] = {}
    for word in found:
        unique.setdefault(word.lower(), word)
    keywords = tuple(list(unique.values())[:6]) or (text,)
    return Decomposition(keywords, intent)


def match_keywords(query: str, drop: frozenset[str] = frozenset()) -> list[str]:
    """The rule keywords of ``query`` a matcher that requires every keyword gets: none in ``drop`` and none whose
    words, as the matcher sees them, are all stop words (fix: 'AND“', a mark glued to the stop word 'and', was
    kept as a term every match had to hold, so forget selected nothing)."""
    return [k for k in decompose_rules(query).keywords
            if k.lower() not in drop and not all(w in STOP_WORDS for w in fts_words(k))]


@dataclass(slots=True)
class Decomposer:
    """Rule or LLM decomposition with the seed's cache (Q21: keyed by ``query[:200]`` only, unbounded)."""

    model: Model | None
    context_in_key: bool = False
    cache: OrderedDict[tuple[str, ...], Decomposition] = field(default_factory=OrderedDict)

    def __call__(self, query: str, recent: Sequence[Mapping[str, str]], *, use_model: bool) -> Decomposition:
        """Decompose ``query``; model failures fall back to the rules with the reason."""
        text = query.strip()
        if len(text) < 3:
            return Decomposition((text,), "general")
        if not use_model or self.model is None:
            return decompose_rules(query)
        context = tuple(f"[{m.get('role', '')}] {str(m.get('content', ''))[:80]}" for m in list(recent)[-2:])
        key = (query[:200], *context) if self.context_in_key else (query[:200],)  # fix: spec §7 Q21
        if key in self.cache:
            self.cache.move_to_end(key)
            return self.cache[key]
        try:
            result = self._ask(query, context)
        except ModelError as exc:
            rules = decompose_rules(query)
            return Decomposition(rules.keywords, rules.intent, "heuristic", exc.reason)
        self.cache[key] = result
        if self.context_in_key and len(self.cache) > CACHE_LIMIT:
            self.cache.popitem(last=False)
        return result

    def _ask(self, query: str, context: Sequence[str]) -> Decomposition:
        assert self.model is not None
        prompt = render("decompose_user", query=query[:300], context=list(context))
        request = ModelRequest(DECOMPOSE_PURPOSE, (Message("user", prompt.text),), DECOMPOSE_SCHEMA, DECOMPOSE_TIMEOUT_S,
                               prompt.version, max_tokens=256)
        data = self.model.query(request).data
        keywords = tuple(str(k).strip() for k in data.get("keywords", []) if isinstance(k, str | int | float) and str(k).strip())
        if not keywords:
            raise ModelError("decomposition returned no keywords", reason="schema")
        intent = data.get("intent")
        return Decomposition(keywords[:6], intent if intent in INTENTS else "general", "model")


def enhanced_query(query: str, keywords: Sequence[str], recent: Sequence[Mapping[str, str]]) -> str:
    """The query, each keyword not already in it, and the last 3 recent messages cut to 100 characters."""
    parts = [query, *(k for k in keywords if k not in query), *(str(m.get("content", ""))[:100] for m in list(recent)[-3:])]
    return " ".join(p for p in parts if p)


def to_markdown(row: Mapping[str, Any]) -> str:
    """``SemanticMemory.to_markdown``: ``- [type] subject: content (tags: …)``."""
    subject = f"{row['subject']}: " if row.get("subject") else ""
    tags = row.get("tags") or []
    suffix = f" (tags: {', '.join(str(t) for t in tags)})" if tags else ""
    return f"- [{row['type']}] {subject}{row['content']}{suffix}"


def expired(db: Database, row: Mapping[str, Any]) -> bool:
    """The read-time filter: ``expires_at < now``."""
    stamp = parse_iso(row.get("expires_at"))
    return stamp is not None and stamp < db.now_naive()


def _candidate(db: Database, row: Mapping[str, Any], source: str, content: str, stamp: str | None) -> Candidate:
    recency = math.exp(-0.1 * age_days(db, stamp))
    access = min(1.0, math.log1p(int(row.get("access_count") or 0)) / 5)
    return Candidate(str(row["id"]), source, str(row.get("type", "episode")), content, RELEVANCE[source], recency,
                     float(row.get("importance_score") or 0.0), access, row=dict(row))


def semantic_path(db: Database, text: str) -> list[Candidate]:
    """FTS over the enhanced query (15, SQLite asked for 30), expired rows skipped, relevance 0.8."""
    return [_candidate(db, h.row, "semantic", to_markdown(h.row), h.row.get("updated_at"))
            for h in search_semantic(db, text, 15) if not expired(db, h.row)]


def episode_entities(text: str, *, broad: bool) -> list[str]:
    """Windows paths, filenames, then the first 5 words longer than 2 characters (Q26: stop words included at the seed)."""
    found = [*_WIN_PATH.findall(text), *_EPISODE_FILE.findall(text)]
    if broad:
        words = [w for w in text.split() if len(w) > 2]
    else:  # fix: spec §7 Q26 — content words only, punctuation stripped, at least 4 characters
        words = [w for w in _SPLIT.split(text) if len(w) > 3 and w.lower() not in STOP_WORDS]
    return list(dict.fromkeys([*found, *words[:5]]))


def episode_path(db: Database, text: str) -> list[Candidate]:
    """``entities LIKE %e%`` for the first 3 entities, 3 each, first 5 kept, relevance 0.6; never expiry-filtered."""
    out: dict[str, Candidate] = {}
    for entity in episode_entities(text, broad=db.quirks.q26_episode_entities_broad)[:3]:
        for ep in search_episodes(db, entity, 3):
            row = {**ep, "type": "episode"}
            out.setdefault(ep["id"], _candidate(db, row, "episode", f"- [episode {str(ep['started_at'])[:10]}] {ep['summary']}",
                                                ep.get("ended_at")))
    return list(out.values())[:5]


def recent_path(db: Database) -> list[Candidate]:
    """Query-independent: top 5 by importance ≥ 0.6, then drop expired rows and recency < 0.3 (after the limit)."""
    out = []
    for row in db.query(min_importance=0.6, limit=5):
        cand = _candidate(db, row, "recent", to_markdown(row), row.get("updated_at"))
        if not expired(db, row) and cand.recency_score >= 0.3:
            out.append(cand)
    return out


def merge(*paths: Sequence[Candidate]) -> list[Candidate]:
    """Merge by id in path order; a duplicate replaces the kept one only with strictly higher relevance."""
    merged: dict[str, Candidate] = {}
    for path in paths:
        for cand in path:
            kept = merged.get(cand.memory_id)
            if kept is None or cand.relevance > kept.relevance:
                merged[cand.memory_id] = cand
    return list(merged.values())


def rerank(candidates: Sequence[Candidate], limit: int) -> list[Candidate]:
    """``0.4·rel + 0.25·recency + 0.2·importance + 0.15·access``; facts with an action word early ×0.3; stable sort."""
    scored = []
    for c in candidates:
        score = W_RELEVANCE * c.relevance + W_RECENCY * c.recency_score + W_IMPORTANCE * c.importance_score
        score += W_ACCESS * c.access_frequency_score
        if c.memory_type == "fact" and any(w in c.content[:30] for w in ACTION_WORDS):
            score *= 0.3
        scored.append(Candidate(c.memory_id, c.source_type, c.memory_type, c.content, c.relevance, c.recency_score,
                                c.importance_score, c.access_frequency_score, round(score, 6), c.row))
    return sorted(scored, key=lambda c: -c.score)[:limit]


def retrieve_candidates(db: Database, decomposer: Decomposer, query: str, recent: Sequence[Mapping[str, str]], *,
                        limit: int = 20, use_model: bool = False) -> tuple[list[Candidate], Decomposition, str]:
    """Path A: decompose, build the enhanced query, recall semantic/episode/recent (attachments: none), merge, rerank."""
    decomposition = decomposer(query, recent, use_model=use_model)
    text = enhanced_query(query, decomposition.keywords, recent)
    ranked = rerank(merge(semantic_path(db, text), episode_path(db, text), recent_path(db)), limit)
    return ranked, decomposition, text


def typed_search(db: Database, query: str, memory_type: str | None, limit: int = 10) -> list[Candidate]:
    """Path B: ``search_semantic(query, 10, type)`` with the expiry filter, in bm25 order; ``score`` = the backend's."""
    return [replace(_candidate(db, h.row, "semantic", to_markdown(h.row), h.row.get("updated_at")), score=h.score)
            for h in search_semantic(db, query, limit, memory_type) if not expired(db, h.row)]


def substring_search(db: Database, query: str, limit: int = 10) -> list[Candidate]:
    """Path C over SQLite (the v1 cache is not ported; SQLite is authoritative as in 68fabde8b, so no Q17 resurrection)."""
    # fix: spec §4.1 path C — the sort runs over every match (the v1 cache held them all), not over the first 200
    # rows of an unordered LIKE, which could leave the most important match out (LIMIT -1: no limit)
    rows = [r for r in db.search_like([query.strip()], -1, escape=True) if not expired(db, r)] if query.strip() else []
    rows.sort(key=lambda r: (-float(r["importance_score"]), -int(r["access_count"])))
    return [_candidate(db, r, "semantic", to_markdown(r), r.get("updated_at")) for r in rows[:limit]]
