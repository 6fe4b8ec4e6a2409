"""Retrieval (spec §4.2): decomposition, enhanced query, the recall paths, merge, the rerank formula, recency cutoff."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from memory_core.model import ScriptedModel
from memory_core.sqlite.retrieval import Candidate, decompose_rules, enhanced_query, merge, rerank
from memory_core.sqlite.stamps import iso
from tests.sqlite.conftest import T0, Factory


def test_rule_decomposition() -> None:
    d = decompose_rules("What is in C:\\work\\notes and report.pdf? show me the photo")
    assert d.intent == "search_file"
    assert d.keywords[:2] == ("C:\\work\\notes", "report.pdf")
    assert "the" not in d.keywords
    assert "What" not in d.keywords
    assert len(d.keywords) <= 6
    assert decompose_rules("用户喜欢什么编辑器").keywords == ("用户喜欢什么编辑器",)  # one phrase, no segmentation
    assert decompose_rules("the a is").keywords == ("the a is",)


def test_enhanced_query_appends_new_keywords_and_recent_messages() -> None:
    recent = [{"role": "user", "content": f"message {i} " + "x" * 200} for i in range(5)]
    text = enhanced_query("dark theme", ["dark", "editor"], recent)
    assert text.startswith("dark theme editor message 2 ")
    assert "message 1" not in text
    assert len(text) < len("dark theme editor") + 3 * 101 + 3


def test_rerank_formula_and_action_word_penalty() -> None:
    fresh = Candidate("a", "semantic", "preference", "- [preference] x", 0.8, 1.0, 0.7, 0.0)
    action = Candidate("b", "semantic", "fact", "- [fact] 运行 the build", 0.8, 1.0, 0.7, 0.0)
    accessed = Candidate("c", "recent", "skill", "- [skill] y", 0.5, math.exp(-0.1 * 2), 0.6, min(1, math.log1p(3) / 5))
    ranked = rerank([action, accessed, fresh], 20)
    assert [c.memory_id for c in ranked] == ["a", "c", "b"]
    assert ranked[0].score == pytest.approx(0.71)  # 0.32 + 0.25 + 0.14, the spec's worked example
    assert ranked[2].score == pytest.approx(0.71 * 0.3)
    expected_c = 0.4 * 0.5 + 0.25 * math.exp(-0.2) + 0.2 * 0.6 + 0.15 * math.log1p(3) / 5
    assert ranked[1].score == pytest.approx(expected_c, abs=1e-6)


def test_merge_keeps_strictly_higher_relevance() -> None:
    semantic = Candidate("m", "semantic", "fact", "s", 0.8, 1, 0.5, 0)
    recent = Candidate("m", "recent", "fact", "r", 0.5, 1, 0.5, 0)
    attach = Candidate("m", "attachment", "fact", "a", 0.85, 1, 0.5, 0)
    tie = Candidate("m", "episode", "fact", "t", 0.85, 1, 0.5, 0)
    assert merge([recent], [semantic])[0].source_type == "semantic"
    assert merge([semantic], [recent])[0].source_type == "semantic"
    assert merge([semantic], [attach], [tie])[0].source_type == "attachment"


@pytest.mark.parametrize(("days", "in_recent"), [(12.0, True), (12.1, False)])
def test_recent_path_recency_cutoff(make: Factory, days: float, in_recent: bool) -> None:
    mem = make("fixed")
    stamp = iso(T0 - timedelta(days=days))
    mem.seed([{"content": "important unrelated memory", "importance": 0.9, "updated_at": stamp, "created_at": stamp}])
    result = mem.recall("zzz qqq", 5, recent_messages=[])
    assert [c.source_type for c in result.items] == (["recent"] if in_recent else [])


def test_recent_path_is_query_independent_and_ignores_low_importance(make: Factory) -> None:
    mem = make("fixed")
    mem.seed([{"content": "high importance note", "importance": 0.6}, {"content": "low importance note", "importance": 0.59}])
    result = mem.recall("completely different words", 5, recent_messages=[])
    assert [c.row["content"] for c in result.items] == ["high importance note"]


def test_recall_candidates_provenance_and_prompt_text(make: Factory) -> None:
    mem = make("fixed")
    (mid,) = mem.seed([{"content": "User prefers the fish shell", "importance": 0.7, "subject": "user", "predicate": "shell"}])
    result = mem.recall("which shell do I use", 5, recent_messages=[])
    (top,) = result.items
    assert (top.memory_id, top.source_type, top.memory_type, top.relevance) == (mid, "semantic", "fact", 0.8)
    assert top.score == pytest.approx(0.4 * 0.8 + 0.25 + 0.2 * 0.7)
    assert result.prompt_text == "[semantic] - [fact] user: User prefers the fish shell (tags: fact)"
    assert (result.strategy, result.fallback_reason, result.path) == ("heuristic", None, "candidates")


def test_cascade_falls_through_to_typed_and_substring(make: Factory) -> None:
    mem = make("fixed")
    mem.seed([{"content": "low importance fish shell note", "importance": 0.3, "type": "skill"}])
    typed = mem.recall("fish", 5, path="cascade", memory_type="skill")
    assert typed.path == "typed"
    assert len(typed.items) == 1
    assert mem.recall("nothing matches", 5, path="cascade").prompt_text == "未找到与 'nothing matches' 相关的记忆"
    assert mem.recall("h sh", 5, path="cascade").path == "substring"  # too short for any FTS token


def test_llm_decomposition_and_fallback(make: Factory) -> None:
    model = ScriptedModel.of([{"keywords": ["fish", " shell ", ""], "intent": "bogus"}, {"keywords": []}])
    mem = make("fixed", model=model)
    mem.seed([{"content": "User prefers the fish shell", "importance": 0.5}])
    ok = mem.recall("what's my favourite terminal?", 5, "model", recent_messages=[])
    assert (ok.strategy, ok.keywords, ok.intent, ok.fallback_reason) == ("model", ("fish", "shell"), "general", None)
    assert [c.source_type for c in ok.items] == ["semantic"]
    assert model.calls[0].purpose == "sqlite-memory-decompose"
    assert model.calls[0].prompt_version.startswith("sqlite/decompose_user@")
    bad = mem.recall("another question entirely", 5, "model", recent_messages=[])
    assert (bad.strategy, bad.fallback_reason) == ("heuristic", "schema")
    none = make("fixed", name="nomodel").recall("anything", 5, "model")
    assert (none.strategy, none.fallback_reason) == ("heuristic", "no_model")
