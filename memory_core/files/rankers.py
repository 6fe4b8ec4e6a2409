"""Ranked recall strategies beyond the spec's heuristic: Okapi BM25, reciprocal-rank fusion, the factory (pure).

The shared vocabulary (``Ranked``, ``Ranker``, ``top``, ``tokens`` …) lives in the leaf ``memory_core.files.ranking`` and
is re-exported here; the MiniLM ranker lives in ``memory_core.files.embedding``. A ``DenseCache`` holds the one MiniLM
ranker (and its embedding cache) that callers share explicitly, instead of a process-global.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from memory_core.files.embedding import EmbeddingRanker, model_dir
from memory_core.files.ranking import (
    STOPWORDS,
    Ranked,
    Ranker,
    doc_text,
    reciprocal_rank_fusion,
    tokens,
    top,
)
from memory_core.files.recall import score_doc, select_heuristic, tokenize
from memory_core.files.topic import TopicDoc

__all__ = [
    "RANKED_STRATEGIES", "STOPWORDS", "BM25Index", "BM25Ranker", "DenseCache", "HeuristicRanker", "HybridRanker",
    "Ranked", "Ranker", "doc_text", "make_ranker", "make_rankers", "reciprocal_rank_fusion", "tokens", "top",
]


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


@dataclass(frozen=True)
class BM25Ranker:
    """BM25 over name + description + body; abstains when no query term occurs in any doc.

    Token lists are kept per doc (a ``TopicDoc`` is immutable, so it is its own cache key) and the index of the last
    doc list is reused while the same docs come back, so an unchanged memory costs only the query.
    """

    name: str = "bm25"
    threshold: float = 0.0
    _tokens: dict[TopicDoc, list[str]] = field(default_factory=dict, compare=False, repr=False)
    _last: list[tuple[tuple[TopicDoc, ...], BM25Index]] = field(default_factory=list, compare=False, repr=False)

    def index(self, docs: Sequence[TopicDoc]) -> BM25Index:
        """The BM25 index of ``docs`` (cached)."""
        key = tuple(docs)
        if self._last and self._last[0][0] == key:
            return self._last[0][1]
        if len(self._tokens) > 2 * len(key) + 256:  # keep the cache to about the live docs
            live = set(key)
            for stale in [d for d in self._tokens if d not in live]:
                del self._tokens[stale]
        lists = []
        for d in key:
            toks = self._tokens.get(d)
            if toks is None:
                toks = self._tokens[d] = tokens(doc_text(d))
            lists.append(toks)
        built = BM25Index(lists)
        self._last[:] = [(key, built)]
        return built

    def rank(self, query: str, docs: Sequence[TopicDoc], *, limit: int) -> list[Ranked]:
        return top(self.index(docs).scores(tokens(query)), docs, limit=limit, threshold=self.threshold)


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
        toks = tokenize(query)
        return [Ranked(d, float(score_doc(toks, d))) for d in select_heuristic(query, docs, limit=limit)]


@dataclass
class DenseCache:
    """The MiniLM ranker shared by the rankers built with this object, created (weights verified) on first need.

    Create one where sharing should end (a run, a benchmark) and pass it to ``make_rankers``/``make_ranker``; its
    embedding cache lives as long as the object, not the process.
    """

    abstain: bool = True
    """False keeps every doc (threshold -1), for benchmarks."""
    _ranker: Ranker | None = field(default=None, repr=False)

    def ranker(self) -> Ranker:
        """The shared MiniLM ranker; raises ``EmbeddingUnavailable`` with the install hint when it cannot load."""
        if self._ranker is None:
            model_dir()  # fail fast with the install hint
            self._ranker = EmbeddingRanker() if self.abstain else EmbeddingRanker(threshold=-1.0)
        return self._ranker


RANKED_STRATEGIES: Final = ("heuristic", "bm25", "embedding", "hybrid")


def make_rankers(names: Sequence[str], *, abstain: bool = True, hybrid_depth: int = 50,
                 dense: Ranker | DenseCache | None = None) -> dict[str, Ranker]:
    """Rankers by strategy name. ``embedding`` and ``hybrid`` share one MiniLM ranker: ``dense`` itself, the one a
    ``DenseCache`` holds, or a new one built on first need (weights verified at once); ``abstain=False`` keeps
    every doc (benchmarks)."""
    bm25 = BM25Ranker() if abstain else BM25Ranker(threshold=-1.0)
    shared = DenseCache(abstain) if dense is None else dense
    out: dict[str, Ranker] = {}
    for name in names:
        if name == "heuristic":
            out[name] = HeuristicRanker()
        elif name == "bm25":
            out[name] = bm25
        elif name in ("embedding", "hybrid"):
            model = shared.ranker() if isinstance(shared, DenseCache) else shared
            out[name] = model if name == "embedding" else HybridRanker(bm25, model, depth=hybrid_depth)
        else:
            raise ValueError(f"unknown ranked strategy {name!r}; expected one of {', '.join(RANKED_STRATEGIES)}")
    return out


def make_ranker(strategy: str, *, dense: DenseCache) -> Ranker:
    """The ranker behind one ranked strategy, its MiniLM ranker (and embedding cache) taken from ``dense``."""
    return make_rankers([strategy], dense=dense)[strategy]
