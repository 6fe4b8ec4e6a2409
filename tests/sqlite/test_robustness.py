"""Bad input: malformed model replies, metacharacters, oversized items, locked and corrupt database files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memory_core.clock import FixedClock
from memory_core.errors import ModelError
from memory_core.model import ScriptedModel
from memory_core.sqlite import Quirks, SqliteMemory, SqliteMemoryError
from memory_core.sqlite.extraction import MAX_CONTENT_CHARS, MAX_ITEMS
from tests.sqlite.conftest import Factory

TURN = "I always deploy my services with Docker compose on the staging box."
METACHARS = ["'; DROP TABLE memories; --", '"unbalanced quote', "NEAR(a b)", "col:value", "a* OR b*", "100% _done_",
             "^start", "{a b}", "x AND NOT y", "emoji 🚀 rocket", "\\backslash\\", "tab\tand\nnewline", ""]


@pytest.mark.parametrize(("reply", "reason"), [
    ("this is not json at all", "invalid_json"),
    ({"items": "a string instead of a list"}, "schema"),
    ({"wrong_key": []}, "schema"),
    (RuntimeError("connection reset"), "provider"),
    (ModelError("took too long", reason="timeout"), "timeout"),
])
@pytest.mark.parametrize("mode", ["seed", "fixed"])
def test_model_failures_fall_back_with_a_reason(make: Factory, mode: str, reply: object, reason: str) -> None:
    mem = make(mode, model=ScriptedModel.of([reply, {"summary": "deploys with compose"}]))  # type: ignore[list-item]
    mem.add_turns("s", [{"role": "user", "content": TURN}])
    result = mem.extract("s")
    assert result.status == "completed"
    assert result.strategy == "heuristic"
    assert result.fallback_reason == reason
    assert [d.source["source"] for d in mem.documents()] == ["realtime_extraction"]  # the legacy "always" rule


@pytest.mark.parametrize("reply", ["NONE", {"items": []}, {"items": [1, "x", None, {"content": "tiny"}]}])
def test_nothing_to_record_is_not_a_failure(make: Factory, reply: object) -> None:
    mem = make("fixed", model=ScriptedModel.of([reply, {"summary": "nothing"}]))  # type: ignore[list-item]
    mem.add_turns("s", [{"role": "user", "content": TURN}])
    result = mem.extract("s")
    assert (result.status, result.strategy, result.fallback_reason, result.inserted) == ("completed", "model", None, 0)


def test_oversized_and_odd_items_are_cut_not_lost(make: Factory) -> None:
    huge = "x" * (MAX_CONTENT_CHARS * 3)
    items = [{"type": "weird", "content": huge, "importance": 99, "duration": "forever", "subject": 5},
             {"type": "rule", "content": "Never push on Friday", "importance": "0.9"}]
    mem = make("fixed", model=ScriptedModel.of([{"items": items}, {"summary": "s"}]))
    mem.add_turns("s", [{"role": "user", "content": TURN}])
    assert mem.extract("s").inserted == 2
    by_text = {d.text[:5]: d.source for d in mem.documents()}
    big, rule = by_text["xxxxx"], by_text["Never"]
    assert len(big["content"]) == MAX_CONTENT_CHARS
    assert (big["type"], big["importance_score"], big["expires_at"], big["subject"]) == ("fact", 1.0, None, "5")
    assert (rule["type"], rule["priority"], rule["importance_score"]) == ("rule", "permanent", 0.9)
    assert rule["expires_at"] is not None  # RULE with no valid duration defaults to 24h


def test_episode_model_failure_uses_the_fallback(make: Factory) -> None:
    mem = make("fixed", model=ScriptedModel.of([{"items": []}, "garbage"]))
    mem.add_turns("s", [{"role": "user", "content": TURN}, {"role": "assistant", "content": "noted"}])
    result = mem.extract("s")
    assert result.fallback_reason == "invalid_json"
    (episode,) = mem.db.conn.execute("SELECT summary, goal FROM episodes").fetchall()
    assert episode[0] == f"对话涉及: {TURN}"
    assert episode[1] == TURN


@pytest.mark.parametrize("mode", ["seed", "fixed"])
def test_metacharacters_in_content_and_queries(make: Factory, mode: str) -> None:
    mem = make(mode)
    mem.seed([{"content": f"note with {text} inside", "importance": 0.7} for text in METACHARS])
    for text in METACHARS:
        for path in ("candidates", "typed", "cascade"):
            assert mem.recall(text, 5, path=path).prompt_text
        assert mem.forget(text, dry_run=True).removed == ()
    assert mem.db.conn.execute("SELECT count(*) FROM memories").fetchone()[0] == len(METACHARS)
    assert mem.fts_integrity() is None
    hits = [c.row["content"] for c in mem.recall("DROP TABLE memories", 5, path="typed").items]
    assert hits == ["note with '; DROP TABLE memories; -- inside"]  # the content was stored as data, both modes


def test_locked_database_is_one_clear_line_and_loses_nothing(tmp_path: Path, clock: FixedClock) -> None:
    mem = SqliteMemory(tmp_path / "locked.db", clock, quirks=Quirks.fixed(), busy_timeout_ms=50)
    (kept,) = mem.seed([{"content": "written before the lock"}])
    other = sqlite3.connect(tmp_path / "locked.db")
    other.execute("BEGIN EXCLUSIVE")
    with pytest.raises(SqliteMemoryError) as info:
        mem.seed([{"content": "written during the lock"}])
    message = str(info.value)
    assert "locked.db" in message
    assert "locked" in message
    assert "\n" not in message
    other.rollback()
    other.close()
    mem.seed([{"content": "written during the lock"}])
    assert sorted(d.text for d in mem.documents()) == ["written before the lock", "written during the lock"]
    assert mem.db.get_memory(kept) is not None
    mem.close()


def test_corrupt_database_file_is_one_clear_line(tmp_path: Path, clock: FixedClock) -> None:
    path = tmp_path / "corrupt.db"
    path.write_bytes(b"this is definitely not an sqlite database" * 200)
    with pytest.raises(SqliteMemoryError) as info:
        SqliteMemory(path, clock)
    assert "corrupt.db" in str(info.value)
    assert "\n" not in str(info.value)
    assert path.read_bytes().startswith(b"this is definitely")  # never overwritten


def test_unopenable_path_is_one_clear_line(tmp_path: Path, clock: FixedClock) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(SqliteMemoryError, match="file"):
        SqliteMemory(blocker / "sub" / "m.db", clock)


def test_bad_turns_and_records_are_value_errors(make: Factory) -> None:
    mem = make("fixed")
    with pytest.raises(ValueError, match="role"):
        mem.add_turns("s", [{"role": "user"}])
    with pytest.raises(ValueError, match="content"):
        mem.seed([{"content": 42}])
    with pytest.raises(ValueError, match="strategy"):
        mem.recall("x", 5, "telepathy")
    with pytest.raises(ValueError, match="importance must be a number"):
        mem.seed([{"content": "fine text", "importance": "very"}])
    assert mem.documents() == []


def test_runaway_item_lists_are_cut(make: Factory) -> None:
    items = [{"type": "FACT", "content": f"fact number {i} about the build", "importance": 0.5} for i in range(500)]
    mem = make("fixed", model=ScriptedModel.of([{"items": items}, {"summary": "s"}]))
    mem.add_turns("s", [{"role": "user", "content": TURN}])
    assert mem.extract("s").inserted == MAX_ITEMS


def test_closed_database_is_a_clear_error(make: Factory) -> None:
    mem = make("fixed")
    mem.close()
    with pytest.raises(SqliteMemoryError, match=r"m\.db"):
        mem.documents()
    with pytest.raises(SqliteMemoryError, match=r"m\.db"):
        mem.fts_integrity()
