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


def fts_words(text: str) -> list[str]:
    """The words the matcher takes from ``text`` (lowercased runs of letters and digits)."""
    return _WORD.findall(text.lower())


def build_match(db: Database, text: str, *, join: str = "OR") -> tuple[str | None, list[str], list[str]]:
    """The MATCH expression for ``text`` (None when nothing can match), any LIKE-only terms, and the MATCH's terms
    (none in seed mode, whose sanitiser keeps the text whole)."""
    if db.quirks.q2_fts_sanitiser:
        return seed_sanitise(text), [], []
    fts, like = query_terms(text, trigram=db.tokenizer == "trigram")
    return (f" {join} ".join(_quote(t) for t in fts) if fts else None), like, fts


WORD_POOL: Final = 8
"""With the trigram index, how many times the usual rows are asked of SQLite before the whole-word filter."""
MAX_WORD_POOL: Final = 65_536
"""The most rows one whole-word search asks of SQLite (a store whose matches are nearly all inside other words)."""
FTS_COLUMNS: Final = ("content", "subject", "predicate", "tags")


def _word_filter(db: Database, terms: list[str], text: str = "") -> tuple[tuple[frozenset[str], ...], tuple[str, ...]]:
    """(the MATCH terms' non-CJK words, its CJK terms) when the trigram index would match those words as substrings
    (fixed mode), else (none, none): no filter. With ``text`` (an AND search), its non-CJK words too short for the
    trigram index are words to hold as well (round 20: forget dropped them, so 'db password' deleted every password
    row and 'x·the' every row holding 'the')."""
    if db.quirks.q2_fts_sanitiser or db.tokenizer != "trigram":
        return (), ()
    short = [p for w in _WORD.findall(text.lower()) for p in _SEGMENT.findall(w) if not is_cjk(p) and len(p) < TRIGRAM]
    return (tuple(stems(t) for t in terms if not is_cjk(t)) + tuple(frozenset({p}) for p in dict.fromkeys(short)),
            tuple(t for t in terms if is_cjk(t)))


_SUFFIXES: Final = ("ing", "ed", "es", "s", "d")
_VOWELS: Final = frozenset("aeiouy")
_UNDOUBLED: Final = _VOWELS | frozenset("lsz")
"""Doubled finals that belong to the base word (pass, call, buzz), as Porter's step 1b keeps them."""


def stems(word: str) -> frozenset[str]:
    """``word`` and the base forms it may inflect (one of -ing, -ed, -es, -s, -d taken off while at least 3
    characters remain; then also a doubled final consonant other than l, s or z undone, as Porter's step 1b does,
    and, after -ing/-ed, an ``e`` put back): 'liked', 'liking' and 'likes' share 'like' with it, 'running' 'run',
    'used' 'use'; 'passed' keeps 'pass' ('pas' is no word it inflects), 'called' 'call'; 'category' and 'cat' share
    none."""
    out = {word}
    for suffix in _SUFFIXES:
        rest = word[: -len(suffix)]
        if word.endswith(suffix) and len(rest) >= TRIGRAM:
            out.add(rest)
            if len(rest) > TRIGRAM and rest[-1] == rest[-2] and rest[-1] not in _UNDOUBLED:
                out.add(rest[:-1])  # running → run, stopped → stop
            if suffix in ("ing", "ed"):
                out.add(rest + "e")  # liking → like
    return frozenset(out)


def _has_words(row: dict[str, Any], words: tuple[frozenset[str], ...], cjk: tuple[str, ...], join: str) -> bool:
    """Whether a trigram hit holds the query's words as whole words (up to an inflection, :func:`stems`): every word
    (AND: the CJK terms are substrings by the MATCH itself), or any word or any CJK term (OR; CJK has no spaces)."""
    text = " ".join(str(row.get(c) or "") for c in FTS_COLUMNS).lower()
    # fix: every word of the row was stemmed (10 MB of content: 7 s a recall); a word shares a stem with a query word
    # only if it starts as that word does (stems keep the first 3 characters), so only distinct such words are stemmed
    heads = {s[:TRIGRAM] for w in words for s in w}
    found = {s for word in set(_WORD.findall(text)) for part in _SEGMENT.findall(word) if part[:TRIGRAM] in heads
             for s in stems(part)}
    if join == "AND":
        return all(w & found for w in words)
    return any(w & found for w in words) or any(t in text for t in cjk)


def score_of(rank: float, *, inverted: bool) -> float:
    """The backend score: the seed's ``1/(1+|rank|)`` (1.0 at rank 0), inverted (Q4); fixed: ``|rank|/(1+|rank|)``."""
    if inverted:
        return 1.0 if rank == 0 else 1.0 / (1.0 + abs(rank))
    return abs(rank) / (1.0 + abs(rank))  # fix: spec §7 Q4 — a better (more negative) bm25 scores higher


def search_semantic(db: Database, text: str, limit: int, filter_type: str | None = None, *,
                    join: str = "OR") -> list[Hit]:
    """``FTS5Backend.search``: ask SQLite for 2×limit rows, filter by type, keep ``limit``, attach the score."""
    match, like, terms = build_match(db, text, join=join)
    words, cjk = _word_filter(db, terms, text if join == "AND" else "")
    asked = limit * 2 if not words else max(limit * 2 * WORD_POOL, 64)
    rows = db.search_fts(match, asked) if match else []
    while words and match:  # fix: the trigram index matches inside words ('cat' in 'communicated'): whole words only
        kept = [(row, rank) for row, rank in rows if _has_words(row, words, cjk, join)]
        if len(kept) >= limit * 2 or len(rows) < asked or asked >= MAX_WORD_POOL:
            rows = kept[: limit * 2]
            break
        asked *= 4  # more inside-word hits than the rows asked for held: ask for more, in bm25 order
        rows = db.search_fts(match, asked)
    hits = [Hit(row, rank, score_of(rank, inverted=db.quirks.q4_inverted_score)) for row, rank in rows]
    if like and join == "AND":  # every term must occur: filter FTS hits, or select by LIKE when FTS had no terms
        pool = hits if match else [Hit(r, 0.0, 0.5) for r in db.search_like(like, limit * 2, escape=True)]
        hits = [h for h in pool if all(t in str(h.row["content"]).lower() for t in like)
                and (not words or _has_words(h.row, words, cjk, join))]
    elif like:
        seen = {h.row["id"] for h in hits}
        hits += [Hit(r, 0.0, 0.5) for r in db.search_like(like, limit * 2, escape=True) if r["id"] not in seen]
    if filter_type:
        hits = [h for h in hits if str(h.row["type"]).lower() == filter_type.lower()]
    return hits[:limit]
