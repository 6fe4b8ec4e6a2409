from __future__ import annotations

import math

import pytest

from memory_core.files.rankers import BM25Index, BM25Ranker, HybridRanker, Ranked, reciprocal_rank_fusion, tokens
from memory_core.files.topic import TopicDoc


def doc(path: str, body: str) -> TopicDoc:
    return TopicDoc("user", path, "", "", body)


def test_tokens_drop_stopwords_and_punctuation() -> None:
    assert tokens("The Kiln, it BROKE yesterday!") == ["kiln", "broke", "yesterday"]


def test_bm25_scores_match_a_hand_computation() -> None:
    docs = [["kiln", "vase"], ["kiln"], ["dog", "race", "race"]]
    index = BM25Index(docs)
    n, avg = 3, (2 + 1 + 3) / 3
    idf_kiln = math.log(1 + (n - 2 + 0.5) / (2 + 0.5))
    idf_race = math.log(1 + (n - 1 + 0.5) / (1 + 0.5))

    def term(idf: float, f: int, dl: int) -> float:
        return idf * f * 2.2 / (f + 1.2 * (1 - 0.75 + 0.75 * dl / avg))

    scores = index.scores(["kiln", "race"])
    assert scores[0] == pytest.approx(term(idf_kiln, 1, 2))
    assert scores[1] == pytest.approx(term(idf_kiln, 1, 1))
    assert scores[2] == pytest.approx(term(idf_race, 2, 3))


def test_bm25_ranking_and_abstention() -> None:
    docs = [doc("a.md", "the kiln broke"), doc("b.md", "pottery kiln kiln classes"), doc("c.md", "dog race")]
    ranked = BM25Ranker().rank("kiln", docs, limit=5)
    assert [r.doc.relative_path for r in ranked] == ["b.md", "a.md"]
    assert ranked[0].score > ranked[1].score > 0
    assert BM25Ranker().rank("violin", docs, limit=5) == []  # no term in common: nothing relevant
    assert BM25Ranker().rank("the a of", docs, limit=5) == []  # only stopwords


def test_reciprocal_rank_fusion() -> None:
    a, b, c = doc("a.md", ""), doc("b.md", ""), doc("c.md", "")
    fused = reciprocal_rank_fusion([[Ranked(a, 9), Ranked(b, 5)], [Ranked(b, 0.9), Ranked(c, 0.1)]], k=60)
    assert [r.doc.relative_path for r in fused] == ["b.md", "a.md", "c.md"]
    assert fused[0].score == pytest.approx(1 / 62 + 1 / 61)
    assert fused[1].score == pytest.approx(1 / 61)


class _Fixed:
    name = "fixed"

    def __init__(self, order: list[str]) -> None:
        self.order = order

    def rank(self, query: str, docs: list[TopicDoc], *, limit: int) -> list[Ranked]:
        by = {d.relative_path: d for d in docs}
        return [Ranked(by[p], 1.0) for p in self.order if p in by][:limit]


def test_hybrid_fuses_both_rankers() -> None:
    docs = [doc(p, "") for p in ("a.md", "b.md", "c.md")]
    hybrid = HybridRanker(_Fixed(["a.md", "b.md"]), _Fixed(["b.md", "c.md"]))  # type: ignore[arg-type]
    assert [r.doc.relative_path for r in hybrid.rank("q", docs, limit=2)] == ["b.md", "a.md"]


def _imports(module: str) -> set[str]:
    import ast
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec(module)
    assert spec is not None
    assert spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_no_import_circle_between_ranking_modules() -> None:
    ranking_modules = {"memory_core.files.rankers", "memory_core.files.recall", "memory_core.files.embedding"}
    assert not _imports("memory_core.files.ranking") & ranking_modules  # the leaf
    assert not _imports("memory_core.files.embedding") & {"memory_core.files.rankers", "memory_core.files.recall"}
    assert "memory_core.files.rankers" not in _imports("memory_core.files.recall")


def test_dense_cache_shares_one_ranker_between_rankers() -> None:
    from memory_core.files.rankers import DenseCache, make_ranker, make_rankers

    dense = HybridRanker(BM25Ranker(), BM25Ranker(name="fake-dense"))  # any Ranker stands in for MiniLM
    cache = DenseCache()
    cache._ranker = dense
    made = make_rankers(["embedding", "hybrid", "bm25"], dense=cache)
    assert made["embedding"] is dense
    hybrid = made["hybrid"]
    assert isinstance(hybrid, HybridRanker)
    assert hybrid.dense is dense
    assert make_ranker("embedding", dense=cache) is dense
    assert make_ranker("bm25", dense=DenseCache()).name == "bm25"  # bm25 never builds the MiniLM ranker


def test_bm25_cached_index_gives_the_same_ranking() -> None:
    docs = [doc(f"d{i}.md", f"kiln vase {'race ' * i}") for i in range(6)]
    ranker = BM25Ranker()
    first = ranker.rank("race kiln", docs, limit=3)
    assert ranker.rank("race kiln", docs, limit=3) == first
    assert ranker.rank("race kiln", docs[1:], limit=3) == BM25Ranker().rank("race kiln", docs[1:], limit=3)
