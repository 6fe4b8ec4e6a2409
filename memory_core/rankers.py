"""Ranked recall strategies beyond the spec's heuristic: Okapi BM25 and reciprocal-rank fusion (pure).

A ranker scores docs for a query and returns the top ``limit`` with scores, dropping docs below its abstention
threshold, so it can answer "nothing relevant". The embedding ranker lives in ``memory_core.embedding``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol

from memory_core.topic import TopicDoc

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


@dataclass
class BM25Index:
    """Okapi BM25 over a fixed list of token lists (k1 = 1.2, b = 0.75, Lucene idf)."""

    documents: Sequence[Sequence[str]]
    k1: float = 1.2
    b: float = 0.75
    _tf: list[Counter[str]] = field(init=False, repr=False)
    _idf: dict[str, float] = field(init=False, repr=False)
    _len: list[int] = field(init=False, repr=False)
    _avg: float = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._tf = [Counter(d) for d in self.documents]
        self._len = [len(d) for d in self.documents]
        n = len(self.documents)
        self._avg = (sum(self._len) / n) if n else 0.0
        df: Counter[str] = Counter()
        for tf in self._tf:
            df.update(tf.keys())
        # Lucene's idf: log(1 + (N - n + 0.5) / (n + 0.5)), always positive
        self._idf = {t: math.log(1 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()}

    def scores(self, query: Sequence[str]) -> list[float]:
        """BM25 score of every document for the query tokens (repeated query terms count once each time)."""
        out = [0.0] * len(self.documents)
        for term in query:
            idf = self._idf.get(term)
            if idf is None:
                continue
            for i, tf in enumerate(self._tf):
                f = tf.get(term)
                if f:
                    norm = self.k1 * (1 - self.b + self.b * self._len[i] / self._avg) if self._avg else self.k1
                    out[i] += idf * f * (self.k1 + 1) / (f + norm)
        return out


def top(scores: Sequence[float], docs: Sequence[TopicDoc], *, limit: int, threshold: float) -> list[Ranked]:
    """Docs with score > threshold, best first, ties in input order, cut to ``limit``."""
    order = sorted(range(len(docs)), key=lambda i: (-scores[i], i))
    return [Ranked(docs[i], scores[i]) for i in order if scores[i] > threshold][:limit]


@dataclass(frozen=True)
class BM25Ranker:
    """BM25 over name + description + body; abstains when no query term occurs in any doc."""

    name: str = "bm25"
    threshold: float = 0.0

    def rank(self, query: str, docs: Sequence[TopicDoc], *, limit: int) -> list[Ranked]:
        index = BM25Index([tokens(doc_text(d)) for d in docs])
        return top(index.scores(tokens(query)), docs, limit=limit, threshold=self.threshold)


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


@dataclass(frozen=True)
class HybridRanker:
    """Reciprocal-rank fusion of BM25 and embedding rankings (each over a deeper candidate list)."""

    lexical: Ranker
    dense: Ranker
    name: str = "hybrid"
    depth: int = 50

    def rank(self, query: str, docs: Sequence[TopicDoc], *, limit: int) -> list[Ranked]:
        depth = max(self.depth, limit)
        fused = reciprocal_rank_fusion([self.lexical.rank(query, docs, limit=depth),
                                        self.dense.rank(query, docs, limit=depth)])
        return fused[:limit]


@dataclass(frozen=True)
class HeuristicRanker:
    """The spec §7.3 heuristic as a ranker (for benchmarks); score = the heuristic score."""

    name: str = "heuristic"

    def rank(self, query: str, docs: Sequence[TopicDoc], *, limit: int) -> list[Ranked]:
        from memory_core.recall import score_doc, select_heuristic, tokenize

        toks = tokenize(query)
        return [Ranked(d, float(score_doc(toks, d))) for d in select_heuristic(query, docs, limit=limit)]


RANKED_STRATEGIES: Final = ("heuristic", "bm25", "embedding", "hybrid")


def make_rankers(names: Sequence[str], *, abstain: bool = True, hybrid_depth: int = 50,
                 dense: Ranker | None = None) -> dict[str, Ranker]:
    """Rankers by strategy name. ``embedding`` and ``hybrid`` share one MiniLM ranker, built on first need (its
    weights verified at once) unless ``dense`` is given; ``abstain=False`` keeps every doc (benchmarks)."""
    bm25 = BM25Ranker() if abstain else BM25Ranker(threshold=-1.0)
    out: dict[str, Ranker] = {}
    for name in names:
        if name == "heuristic":
            out[name] = HeuristicRanker()
        elif name == "bm25":
            out[name] = bm25
        elif name in ("embedding", "hybrid"):
            if dense is None:
                from memory_core.embedding import EmbeddingRanker, model_dir

                model_dir()  # fail fast with the install hint
                dense = EmbeddingRanker() if abstain else EmbeddingRanker(threshold=-1.0)
            out[name] = dense if name == "embedding" else HybridRanker(bm25, dense, depth=hybrid_depth)
        else:
            raise ValueError(f"unknown ranked strategy {name!r}; expected one of {', '.join(RANKED_STRATEGIES)}")
    return out
