"""The ranking vocabulary every ranker shares (a leaf: it imports no other ranking or recall module).

A ranker scores docs for a query and returns the top ``limit`` with scores, dropping docs below its abstention
threshold, so it can answer "nothing relevant". The rankers themselves live in ``memory_core.files.rankers`` (BM25,
fusion, the spec heuristic, the factory) and ``memory_core.files.embedding`` (MiniLM).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from memory_core.files.topic import TopicDoc

# NLTK's English stopword list (179 words), the list most BM25 baselines use.
STOPWORDS: Final = frozenset(
    """
    i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves he him his
    himself she she's her hers herself it it's its itself they them their theirs themselves what which who whom this
    that that'll these those am is are was were be been being have has had having do does did doing a an the and but
    if or because as until while of at by for with about against between into through during before after above below
    to from up down in out on off over under again further then once here there when where why how all any both each
    few more most other some such no nor not only own same so than too very s t can will just don don't should
    should've now d ll m o re ve y ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't
    haven haven't isn isn't ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't
    weren weren't won won't wouldn wouldn't
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
_TOKEN: Final = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True, slots=True)
class Ranked:
    """A doc and its score under one ranker."""

    doc: TopicDoc
    score: float


class Ranker(Protocol):
    """Ranks docs for a query."""

    @property
    def name(self) -> str:
        """The strategy name this ranker reports."""
        ...

    def rank(self, query: str, docs: Sequence[TopicDoc], *, limit: int) -> list[Ranked]:
        """The top ``limit`` docs above the ranker's threshold, best first."""
        ...


def doc_text(doc: TopicDoc) -> str:
    """What rankers read: name, description and body."""
    return " ".join((doc.title, doc.description, doc.normalized_body))


def tokens(text: str, *, stopwords: frozenset[str] = STOPWORDS) -> list[str]:
    """Lower-case ``[a-z0-9]+`` tokens without stopwords."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in stopwords]


def top(scores: Sequence[float], docs: Sequence[TopicDoc], *, limit: int, threshold: float) -> list[Ranked]:
    """Docs with score > threshold, best first, ties in input order, cut to ``limit``."""
    order = sorted(range(len(docs)), key=lambda i: (-scores[i], i))
    return [Ranked(docs[i], scores[i]) for i in order if scores[i] > threshold][:limit]


def reciprocal_rank_fusion(rankings: Sequence[Sequence[Ranked]], *, k: int = 60) -> list[Ranked]:
    """RRF: score(d) = Σ 1 / (k + rank); a doc absent from a ranking contributes nothing for it."""
    fused: dict[str, float] = {}
    first: dict[str, TopicDoc] = {}
    for ranking in rankings:
        for rank, r in enumerate(ranking, 1):
            fused[r.doc.relative_path] = fused.get(r.doc.relative_path, 0.0) + 1.0 / (k + rank)
            first.setdefault(r.doc.relative_path, r.doc)
    order = sorted(fused, key=lambda p: -fused[p])
    return [Ranked(first[p], fused[p]) for p in order]
