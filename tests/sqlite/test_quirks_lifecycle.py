"""§7 quirks of the lifecycle (dream), each both ways: Q1, Q6, Q7, Q8, Q10, Q11, Q18, Q19, Q24."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory_core.clock import FixedClock
from memory_core.model import ScriptedModel
from memory_core.sqlite import Quirks
from memory_core.sqlite.render import INJECT_MAX_CHARS, MEMORY_MD_TITLE
from memory_core.sqlite.stamps import iso
from memory_core.sqlite.tables import enqueue, queue_rows
from tests.sqlite.conftest import T0, Factory, row


@pytest.mark.parametrize(("days", "fixed_outcome"), [
    (4.8, "kept"), (4.9, "demoted"), (15.2, "demoted"), (15.4, "deleted"), (30.0, "deleted")])
def test_q1_decay_thresholds(make: Factory, days: float, fixed_outcome: str) -> None:
    stamp = iso(T0 - timedelta(days=days))
    for mode in ("seed", "fixed"):
        mem = make(mode, name=mode)
        (mid,) = mem.seed([{"content": "a short term note", "importance": 0.5, "updated_at": stamp, "created_at": stamp}])
        result = mem.dream()
        data = row(mem, mid)
        outcome = "deleted" if data is None else "demoted" if data["priority"] == "transient" else "kept"
        assert outcome == ("kept" if mode == "seed" else fixed_outcome), mode  # seed: SHORT_TERM selects nothing
        assert result.counts["memories_decayed"] == (0 if mode == "seed" or fixed_outcome == "kept" else 1)


def test_q1_demotion_rebases_importance(make: Factory) -> None:
    mem = make("fixed")
    stamp = iso(T0 - timedelta(days=10))
    (mid,) = mem.seed([{"content": "ten days old note", "importance": 0.5, "updated_at": stamp}])
    mem.dream()
    data = row(mem, mid)
    assert data is not None
    assert data["importance_score"] == pytest.approx(0.5 * 0.9**10)


def test_q6_dedupe_ignores_expiry(make: Factory) -> None:
    past = iso(T0 - timedelta(hours=1))
    for mode in ("seed", "fixed"):
        mem = make(mode, name=mode)
        live, _ = mem.seed([{"content": "User likes Python", "importance": 0.5},
                            {"content": "User likes Python and hates Java", "importance": 0.7, "expires_at": past}])
        mem.dream()
        texts = [d.text for d in mem.documents()]
        assert texts == ([] if mode == "seed" else ["User likes Python"]), mode  # seed: the fact is lost entirely
        assert (row(mem, live) is None) == (mode == "seed")


def _daily_item(duration: str) -> dict[str, object]:
    return {"items": [{"type": "RULE", "subject": "user", "predicate": "rule", "content": "Run the linter before committing",
                       "importance": 0.9, "duration": duration}]}


@pytest.mark.parametrize("q7", [True, False])
def test_q7_daily_path_sets_no_expiry(make: Factory, clock: FixedClock, q7: bool) -> None:
    model = ScriptedModel.of([{"summary": "talked about linting"}, _daily_item("24h")])
    mem = make(Quirks.fixed().but(q7_daily_no_retention=q7), model=model)
    mem.add_turns("s", [{"role": "user", "content": "please always run the linter before you commit anything"}])
    mem.dream()  # the turns were never extracted: the daily path handles them
    (doc,) = mem.documents()
    assert doc.source["source"] == "daily_consolidation"
    assert doc.source["expires_at"] == (None if q7 else iso(T0 + timedelta(hours=24)))
    clock.advance(timedelta(hours=25))
    mem.dream()
    assert len(mem.documents()) == (1 if q7 else 0)


@pytest.mark.parametrize("q8", [True, False])
def test_q8_demoted_rows_never_expire(make: Factory, clock: FixedClock, q8: bool) -> None:
    mem = make(Quirks.fixed().but(q8_demotion_keeps_expiry=q8))
    stamp = iso(T0 - timedelta(days=6))
    (mid,) = mem.seed([{"content": "a stale short term note", "importance": 0.5, "updated_at": stamp}])
    mem.dream()
    data = row(mem, mid)
    assert data is not None
    assert data["priority"] == "transient"
    assert data["expires_at"] == (None if q8 else iso(T0 + timedelta(days=1)))
    clock.advance(timedelta(days=1, minutes=1))
    mem.dream()
    assert (row(mem, mid) is not None) == q8  # decay selects only short_term; cleanup needs expires_at


@pytest.mark.parametrize("q10", [True, False])
def test_q10_empty_extraction_is_a_terminal_failure(make: Factory, q10: bool) -> None:
    model = ScriptedModel.of([{"items": []}])
    mem = make(Quirks.fixed().but(q10_queue_loses_work=q10), model=model)
    enqueue(mem.db, "s", 0, "the user talked about nothing memorable at all here")
    mem.dream()
    (entry,) = queue_rows(mem.db)
    assert entry["status"] == ("failed" if q10 else "completed")


@pytest.mark.parametrize("q10", [True, False])
def test_q10_model_failure_is_retried_only_when_fixed(make: Factory, clock: FixedClock, q10: bool) -> None:
    model = ScriptedModel.of([TimeoutError("slow"), {"items": [{"type": "FACT", "content": "The user works on project Atlas",
                                                                 "importance": 0.7, "duration": "permanent"}]}])
    mem = make(Quirks.fixed().but(q10_queue_loses_work=q10), model=model)
    enqueue(mem.db, "s", 0, "the user mentioned working on project Atlas")
    first = mem.dream()
    assert first.fallback_reason == "provider"
    assert queue_rows(mem.db)[0]["status"] == ("failed" if q10 else "pending")
    clock.advance(timedelta(hours=3))
    mem.dream()
    assert [d.text for d in mem.documents()] == ([] if q10 else ["The user works on project Atlas"])


@pytest.mark.parametrize("mode", ["seed", "fixed"])
def test_q11_turns_extracted_twice(make: Factory, mode: str) -> None:
    mem = make(mode)
    mem.add_turns("s", [{"role": "user", "content": "I prefer dark themes in every editor I use, always."},
                        {"role": "assistant", "content": "Noted, dark themes it is."}])
    first = mem.extract("s")
    assert first.inserted >= 1
    assert len(first.episodes) == 1
    result = mem.dream()
    assert (result.counts["unextracted_processed"] > 0, result.counts["episodes"]) == (
        (True, 1) if mode == "seed" else (False, 0))


def test_q18_injection_keeps_the_tail_and_drops_the_title(make: Factory) -> None:
    def words(tag: str, i: int) -> str:  # distinct words, so dedupe keeps every item
        return " ".join(f"{tag}{i}w{j}" for j in range(18))

    records = [{"content": f"preference number {i} {words('p', i)}", "type": "preference", "importance": 0.9} for i in range(5)]
    records += [{"content": f"error lesson {i} {words('e', i)}", "type": "error", "importance": 0.6} for i in range(5)]
    for mode in ("seed", "fixed"):
        mem = make(mode, name=mode)
        mem.seed(records)
        mem.dream()
        full, injected = mem.index_text(), mem.injected_index()
        assert full.startswith(MEMORY_MD_TITLE)
        assert len(full) > INJECT_MAX_CHARS
        assert len(injected) <= INJECT_MAX_CHARS
        first_item = full.splitlines()[3]
        assert first_item.startswith("- preference number")
        if mode == "seed":  # the title and the first (preference) items go; the error lessons survive
            assert full.rstrip("\n").endswith(injected)
            assert MEMORY_MD_TITLE not in injected
            assert first_item not in injected
            assert "error lesson" in injected
        else:
            assert full.startswith(injected)
            assert first_item in injected


def test_q18_empty_section_headers(make: Factory) -> None:
    records = [{"content": "x" * 1600, "type": "preference", "importance": 0.9},
               {"content": "short fact that fits", "type": "fact", "importance": 0.8}]
    for mode in ("seed", "fixed"):
        mem = make(mode, name=mode)
        mem.seed(records)
        mem.dream()
        text = mem.index_text()
        assert "- short fact that fits" in text  # a too-long item ends only its own type's loop
        assert ("## 偏好" in text) == (mode == "seed")


def test_q19_user_md_only_for_chinese_subject(make: Factory) -> None:
    records = [{"content": "The user prefers concise answers", "type": "preference", "subject": "user",
                "predicate": "answer style", "importance": 0.8}]
    for mode in ("seed", "fixed"):
        mem = make(mode, name=mode)
        mem.seed(records)
        mem.dream()
        assert ("concise answers" in mem.user_profile_text()) == (mode == "fixed")


def test_q19_chinese_subject_works_in_both_and_fixed_keeps_a_backup(make: Factory) -> None:
    for mode in ("seed", "fixed"):
        mem = make(mode, name=mode)
        mem.seed([{"content": "用户的名字是小明", "type": "fact", "subject": "用户", "predicate": "名字", "importance": 0.8}])
        (mem.identity_dir).mkdir(parents=True, exist_ok=True)
        (mem.identity_dir / "USER.md").write_text("hand edited profile\n", encoding="utf-8")
        mem.dream()
        assert "## 基本信息" in mem.user_profile_text()
        assert "小明" in mem.user_profile_text()
        backup = mem.identity_dir / "USER.md.bak"
        assert backup.exists() == (mode == "fixed")


def test_q24_uppercase_row_aborts_consolidation(make: Factory) -> None:
    for mode in ("seed", "fixed"):
        mem = make(mode, name=mode)
        mem.db.save_memory({"id": "upper001", "content": "User likes Go", "type": "FACT", "priority": "SHORT_TERM"})
        mem.db.save_memory({"content": "User likes Go a lot", "type": "fact", "importance_score": 0.4})
        result = mem.dream()
        if mode == "seed":
            assert result.status == "failed"
            assert result.reason is not None
            assert "upper001" in result.reason
            assert "m.db" not in result.reason
            assert "seed.db" in result.reason
            assert len(mem.documents()) == 2
        else:
            assert result.status == "updated"
            assert result.counts["duplicates_removed"] == 1


def test_q18_only_an_oversized_item_leaves_a_bare_header_at_the_seed(make: Factory) -> None:
    for mode in ("seed", "fixed"):
        mem = make(mode, name=mode)
        mem.seed([{"content": "y" * 1600, "type": "rule", "importance": 0.9}])
        written = mem.dream().counts["memory_md_written"]
        assert (written, mem.index_text()) == ((1, f"{MEMORY_MD_TITLE}\n\n## 规则\n") if mode == "seed" else (0, ""))
