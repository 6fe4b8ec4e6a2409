"""FTS5 query construction and the semantic search path (spec §4.3), seed sanitiser and the Q2/Q3/Q4 fixes."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from memory_core.sqlite.db import Database

_SEED_STRIP: Final = re.compile(r'["*(){}\[\]^~:]')
_WORD: Final = re.compile(r"[^\W_]+")
_CJK_CLASS: Final = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK: Final = re.compile(f"[{_CJK_CLASS}]+")
_SEGMENT: Final = re.compile(f"[{_CJK_CLASS}]+|[^{_CJK_CLASS}]+")
TRIGRAM: Final = 3


@dataclass(frozen=True, slots=True)
class Hit:
    """A semantic search hit: the row, SQLite's ``bm25`` rank and the backend score."""

    row: dict[str, Any]
    rank: float
    score: float


def is_cjk(text: str) -> bool:
    """True if ``text`` contains a CJK (or kana/hangul) character."""
    return bool(_CJK.search(text))


def seed_sanitise(text: str) -> str:
    """The seed's ``_sanitize_fts_query``: strip ``"*(){}[]^~:``, OR the whitespace tokens, ``""`` if empty (Q2)."""
    tokens = _SEED_STRIP.sub(" ", text).split()
    return " OR ".join(tokens) if tokens else '""'


def _quote(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'


def query_terms(text: str, *, trigram: bool) -> tuple[list[str], list[str]]:
    """Word tokens to match (quoted later) and short CJK tokens a trigram index cannot match (for ``LIKE``).

    fix: spec §7 Q2 — tokens are words only, so punctuation and operator words cannot reach the FTS parser.
    fix: spec §7 Q3 — with the trigram index a CJK run becomes its 3-character windows; 2-character CJK words go to LIKE.
    """
    fts: list[str] = []
    like: list[str] = []
    for word in _WORD.findall(text.lower()):
        for part in _SEGMENT.findall(word) if trigram else [word]:
            if not trigram:
                fts.append(part)
            elif is_cjk(part):
                if len(part) < TRIGRAM:
                    like.append(part)
                else:
                    fts.extend(part[i : i + TRIGRAM] for i in range(len(part) - TRIGRAM + 1))
            elif len(part) >= TRIGRAM:
                fts.append(part)
    return list(dict.fromkeys(fts)), list(dict.fromkeys(like))


def build_match(db: Database, text: str, *, join: str = "OR") -> tuple[str | None, list[str]]:
    """The MATCH expression for ``text`` (None when nothing can match) and any LIKE-only terms."""
    if db.quirks.q2_fts_sanitiser:
        return seed_sanitise(text), []
    fts, like = query_terms(text, trigram=db.tokenizer == "trigram")
    return (f" {join} ".join(_quote(t) for t in fts) if fts else None), like


def score_of(rank: float, *, inverted: bool) -> float:
    """The backend score: the seed's ``1/(1+|rank|)`` (1.0 at rank 0), inverted (Q4); fixed: ``|rank|/(1+|rank|)``."""
    if inverted:
        return 1.0 if rank == 0 else 1.0 / (1.0 + abs(rank))
    return abs(rank) / (1.0 + abs(rank))  # fix: spec §7 Q4 — a better (more negative) bm25 scores higher


def search_semantic(db: Database, text: str, limit: int, filter_type: str | None = None, *,
                    join: str = "OR") -> list[Hit]:
    """``FTS5Backend.search``: ask SQLite for 2×limit rows, filter by type, keep ``limit``, attach the score."""
    match, like = build_match(db, text, join=join)
    rows = db.search_fts(match, limit * 2) if match else []
    hits = [Hit(row, rank, score_of(rank, inverted=db.quirks.q4_inverted_score)) for row, rank in rows]
    if like and join == "AND":  # every term must occur: filter FTS hits, or select by LIKE when FTS had no terms
        pool = hits if match else [Hit(r, 0.0, 0.5) for r in db.search_like(like, limit * 2, escape=True)]
        hits = [h for h in pool if all(t in str(h.row["content"]).lower() for t in like)]
    elif like:
        seen = {h.row["id"] for h in hits}
        hits += [Hit(r, 0.0, 0.5) for r in db.search_like(like, limit * 2, escape=True) if r["id"] not in seen]
    if filter_type:
        hits = [h for h in hits if str(h.row["type"]).lower() == filter_type.lower()]
    return hits[:limit]
