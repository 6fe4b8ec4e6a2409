"""§7 quirks of storage and search, each both ways: Q2, Q3, Q4, Q5, Q16, Q22."""

from __future__ import annotations

import pytest

from memory_core.sqlite import Quirks, SqliteMemoryError
from memory_core.sqlite.fts import search_semantic
from memory_core.sqlite.tables import mark_extracted, save_turn, search_turns, unextracted_turns
from tests.sqlite.conftest import Factory

PUNCTUATED = ["What editor theme do I like?", "the editor's theme", "dark-mode editor", "editor AND", "NOT editor",
              "editor OR theme OR", "c++ editor", "editor. theme!", "editor \\ theme"]


@pytest.mark.parametrize("query", PUNCTUATED)
def test_q2_fts_sanitiser_english_punctuation_and_operators(make: Factory, query: str) -> None:
    seed, fixed = make("seed", name="s"), make("fixed", name="f")
    for mem in (seed, fixed):
        mem.seed([{"content": "User likes the solarized dark theme in the editor", "type": "preference"}])
    assert seed.recall(query, 5, path="typed").items == ()  # MATCH raised; the seed swallows it into []
    assert [c.memory_type for c in fixed.recall(query, 5, path="typed").items] == ["preference"]


def test_q2_seed_plain_words_still_match(make: Factory) -> None:
    mem = make("seed")
    mem.seed([{"content": "User likes the solarized dark theme in the editor", "type": "preference"}])
    assert len(mem.recall("editor theme", 5, path="typed").items) == 1


@pytest.mark.parametrize(("query", "content"), [
    ("Python", "用户喜欢用Python写代码"),
    ("用户喜欢什么编辑器", "用户喜欢Vim编辑器"),
    ("喜欢", "我们都喜欢猫"),
    ("東京に住んでいる", "ユーザーは東京に住んでいる"),
])
def test_q3_cjk_recall(make: Factory, query: str, content: str) -> None:
    seed, fixed = make("seed", name="s"), make("fixed", name="f")
    for mem in (seed, fixed):
        mem.seed([{"content": content, "type": "fact"}, {"content": "unrelated english text", "type": "fact"}])
    assert seed.recall(query, 5, path="typed").items == ()  # the whole CJK run is one unicode61 token
    assert [c.row["content"] for c in fixed.recall(query, 5, path="typed").items] == [content]


def test_q3_tokenizer_switch_rebuilds_the_index(make: Factory) -> None:
    seed = make("seed", name="same")
    seed.seed([{"content": "用户喜欢用Python写代码"}])
    seed.close()
    fixed = make("fixed", name="same")
    assert fixed.db.tokenizer == "trigram"
    assert fixed.fts_integrity() is None
    assert len(fixed.recall("Python", 5, path="typed").items) == 1


def _scores(quirks: Quirks, make: Factory) -> tuple[float, float]:
    mem = make(quirks, name=quirks.mode)
    strong, weak = mem.seed([
        {"content": "kubernetes kubernetes kubernetes cluster"},
        {"content": "kubernetes mentioned once among many other unrelated words about cooking pasta and gardening"},
    ])
    mem.seed([{"content": f"filler note number {i} about cooking"} for i in range(6)])
    hits = {h.row["id"]: h for h in search_semantic(mem.db, "kubernetes", 5)}
    assert hits[strong].rank < hits[weak].rank  # bm25: more negative is better in both modes
    return hits[strong].score, hits[weak].score


def test_q4_inverted_score(make: Factory) -> None:
    strong, weak = _scores(Quirks.seed(), make)
    assert strong < weak  # seed: 1/(1+|rank|) falls as the match improves
    strong, weak = _scores(Quirks.fixed(), make)
    assert strong > weak


@pytest.mark.parametrize("mode", ["seed", "fixed"])
def test_q5_update_in_place_and_fts_integrity(make: Factory, mode: str) -> None:
    mem = make(mode)
    mem.seed([{"id": "m1", "content": "alpha original wording"}])
    mem.seed([{"id": "m1", "content": "beta replacement wording"}])
    assert [d.text for d in mem.documents()] == ["beta replacement wording"]
    if mode == "seed":
        assert mem.fts_integrity() is not None  # "database disk image is malformed"
        assert mem.db.fts_orphans() == 1
    else:
        assert mem.fts_integrity() is None
        assert mem.db.fts_orphans() == 0
    assert len(mem.recall("beta", 5, path="typed").items) == 1
    assert mem.recall("alpha", 5, path="typed").items == ()


@pytest.mark.parametrize("mode", ["seed", "fixed"])
def test_q5_turn_rewrite_resets_extracted(make: Factory, mode: str) -> None:
    mem = make(mode)
    save_turn(mem.db, "s", 0, "user", "first version of the turn")
    mark_extracted(mem.db, "s", [0])
    save_turn(mem.db, "s", 0, "user", "rewritten turn")
    assert len(unextracted_turns(mem.db)) == (1 if mode == "seed" else 0)


def test_q16_short_ids_collide_and_overwrite(make: Factory) -> None:
    draws = iter(["abcdef01" + "0" * 24, "abcdef01" + "1" * 24])
    seed = make("seed", name="s", id_factory=lambda: next(draws))
    first = seed.db.save_memory({"content": "first memory"})
    second = seed.db.save_memory({"content": "second memory"})
    assert first == second == "abcdef01"
    assert [d.text for d in seed.documents()] == ["second memory"]  # the first was silently overwritten

    draws2 = iter(["f" * 32, "f" * 32, "e" * 32])
    fixed = make("fixed", name="f", id_factory=lambda: next(draws2))
    assert fixed.db.save_memory({"content": "first memory"}) == "f" * 32
    assert fixed.db.save_memory({"content": "second memory"}) == "e" * 32
    assert sorted(d.text for d in fixed.documents()) == ["first memory", "second memory"]


def test_q16_fixed_gives_up_loudly_when_ids_keep_colliding(make: Factory) -> None:
    fixed = make("fixed", id_factory=lambda: "d" * 32)
    fixed.db.save_memory({"content": "first"})
    with pytest.raises(SqliteMemoryError, match=r"m\.db"):
        fixed.db.save_memory({"content": "second"})


@pytest.mark.parametrize("mode", ["seed", "fixed"])
def test_q22_like_wildcards(make: Factory, mode: str) -> None:
    mem = make(mode)
    save_turn(mem.db, "s", 0, "user", "we sold 50 apples")
    save_turn(mem.db, "s", 1, "user", "discount is 50% today")
    save_turn(mem.db, "s", 2, "user", "file_name is set")
    save_turn(mem.db, "s", 3, "user", "file-name is set")
    hits = {r["turn_index"] for r in search_turns(mem.db, "50%")}
    names = {r["turn_index"] for r in search_turns(mem.db, "file_name")}
    assert (hits, names) == (({0, 1}, {2, 3}) if mode == "seed" else ({1}, {2}))


@pytest.mark.parametrize("mode", ["seed", "fixed"])
def test_q5_orphan_fts_row_matches_a_later_row_that_reuses_its_rowid(make: Factory, mode: str) -> None:
    mem = make(mode)
    mem.seed([{"id": "m1", "content": "alpha original wording"}])
    mem.seed([{"id": "m1", "content": "beta replacement wording"}])
    assert mem.forget("beta").removed == ("m1",)
    (gamma,) = mem.seed([{"content": "gamma unrelated note"}])
    hits = [c.memory_id for c in mem.recall("alpha", 5, path="typed").items]
    assert hits == ([gamma] if mode == "seed" else [])
