"""The public API: import boundary, capabilities, documents, forget, index text, quirk switches, events."""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

import pytest

import memory_core
from memory_core.events import DreamEvent, ExtractEvent, ForgetEvent, ListSink, RecallEvent
from memory_core.model import ScriptedModel
from memory_core.sqlite import CAPABILITIES, Quirks, SqliteMemory
from memory_core.sqlite.templates import all_prompt_versions
from tests.sqlite.conftest import Factory

PACKAGE = Path(memory_core.__file__).parent
FORBIDDEN = {"memory_core.files.store", "memory_core.files.topic", "memory_core.files.index", "memory_core.files.scan"}
ALLOWED = {"memory_core.clock", "memory_core.model", "memory_core.prompts", "memory_core.errors", "memory_core.events"}


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {name for name in found if name.startswith("memory_core")}


def _module_file(name: str) -> Path | None:
    rel = Path(*name.split(".")[1:])
    for candidate in (PACKAGE / rel.with_suffix(".py"), PACKAGE / rel / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def test_imports_nothing_from_the_file_core_store_topic_index_or_scan() -> None:
    """Walk every import reachable from memory_core/sqlite (transitively, inside memory_core)."""
    todo = [p for p in (PACKAGE / "sqlite").glob("*.py")]
    seen: set[Path] = set()
    reached: set[str] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in _imports(path):
            module_file = _module_file(name)
            if module_file is None or module_file == PACKAGE / "__init__.py":
                continue  # a name imported from a module, or the package root itself
            reached.add(name)
            todo.append(module_file)
    outside = {n for n in reached if not n.startswith("memory_core.sqlite")}
    assert not outside & FORBIDDEN
    assert outside <= ALLOWED, outside - ALLOWED
    assert "memory_core.model" in outside  # the walk does see the seam (the check can fail)


def test_capabilities_declare_what_the_sqlite_system_lacks() -> None:
    """Names of the harness protocol's capabilities (plain strings: memory_core never imports harness)."""
    assert SqliteMemory.capabilities is CAPABILITIES
    assert {"dream", "recall_prompt"} == CAPABILITIES
    assert not CAPABILITIES & {"file_index", "file_paths", "raw_files", "dream_gates", "locks", "extract_queue",
                               "memory_tool", "stray_files"}


def test_documents_are_plain_records(make: Factory) -> None:
    mem = make("fixed")
    a, b = mem.seed([{"content": "User prefers tea", "type": "user", "subject": "user", "predicate": "drink",
                      "created_at": "2026-03-01T10:00:00+00:00"},
                     {"content": "Deploys run on Fridays", "type": "project", "title": "deploys"}])
    docs = {d.id: d for d in mem.documents()}
    assert (docs[a].type, docs[a].title, docs[a].text, docs[a].created_at) == (
        "preference", "user: drink", "User prefers tea", "2026-03-01T10:00:00.000000")
    assert (docs[b].type, docs[b].title) == ("fact", "deploys")
    assert docs[b].source["source"] == "manual"
    assert [d.id for d in mem.documents()] == [a, b]


def test_forget_seed_ors_every_token_fixed_requires_all(make: Factory) -> None:
    records = [{"content": "User likes the dark theme"}, {"content": "User likes green tea"},
               {"content": "Server is dark at night"}]
    for mode, expected in (("seed", 3), ("fixed", 1)):
        mem = make(mode, name=mode)
        mem.seed(records)
        preview = mem.forget("likes dark theme", dry_run=True)
        assert (len(preview.candidates), preview.removed) == (expected, ())
        assert len(mem.documents()) == 3
        done = mem.forget("likes dark theme")
        assert len(done.removed) == expected
        assert len(mem.documents()) == 3 - expected
        assert mem.fts_integrity() is None


def test_forget_respects_max_delete_and_rerenders_the_index(make: Factory) -> None:
    mem = make("fixed")
    words = [" ".join(f"w{i}x{j}" for j in range(5)) for i in range(5)]  # distinct, so dedupe keeps all five
    mem.seed([{"content": f"obsolete build step {w}", "importance": 0.9} for w in words])
    mem.dream()
    assert "obsolete build step" in mem.index_text()
    assert len(mem.forget("obsolete build", max_delete=2).removed) == 2
    assert mem.index_text().count("obsolete build step") == 3
    mem.forget("obsolete build", max_delete=500)
    assert mem.documents() == []


def test_index_text_is_empty_before_the_first_dream(make: Factory) -> None:
    mem = make("fixed")
    mem.seed([{"content": "User prefers tea", "importance": 0.9}])
    assert mem.index_text() == ""
    assert mem.dream().counts["memory_md_written"] == 1
    assert "- User prefers tea" in mem.index_text()
    assert mem.injected_index() == mem.index_text()


def test_quirk_modes_parse_and_report() -> None:
    assert Quirks.parse("seed") == Quirks.seed()
    assert Quirks.parse("fixed") == Quirks.fixed()
    assert Quirks.seed().mode == "seed"
    assert Quirks.fixed().mode == "fixed"
    mixed = Quirks.parse("fixed+q1_decay_priority_case")
    assert (mixed.mode, mixed.enabled()) == ("mixed", ("q1_decay_priority_case",))
    assert Quirks.parse("seed-q5_insert_or_replace").q5_insert_or_replace is False
    with pytest.raises(ValueError, match="unknown quirk"):
        Quirks.parse("fixed+q99_nothing")
    with pytest.raises(ValueError, match="seed"):
        Quirks.parse("buggy")


def test_every_quirk_switch_is_tested_both_ways() -> None:
    """Each switch is named in a test module that exercises it (the per-quirk tests live beside this one)."""
    text = "".join(p.read_text(encoding="utf-8") for p in Path(__file__).parent.glob("test_quirks_*.py"))
    for f in fields(Quirks):
        number = f.name.split("_")[0]
        assert f"def test_{number}_" in text, f"no test for {f.name}"
        assert f.name in text or f"test_{number}_" in text


def test_events_and_prompt_versions(make: Factory) -> None:
    sink = ListSink()
    model = ScriptedModel.of([{"items": [{"type": "PREFERENCE", "content": "User prefers tea over coffee",
                                          "importance": 0.7, "duration": "permanent"}]}, {"summary": "tea"}])
    mem = make("fixed", model=model, events=sink)
    mem.add_turns("s", [{"role": "user", "content": "I really prefer tea over coffee in the morning."}])
    mem.extract("s")
    mem.recall("tea", 5)
    mem.dream()
    mem.forget("tea")
    assert [type(e) for e in sink.events] == [ExtractEvent, RecallEvent, DreamEvent, ForgetEvent]
    assert [c.purpose for c in model.calls] == ["sqlite-memory-extract", "sqlite-memory-episode"]
    versions = all_prompt_versions()
    assert model.calls[0].prompt_version == f"{versions['sqlite/extract_system']}+{versions['sqlite/extract_user']}"


def test_short_turns_cost_no_model_call_at_dream_time(make: Factory) -> None:
    model = ScriptedModel.of([{"summary": "short chat"}, {"items": []}])
    mem = make("seed", model=model)
    mem.add_turns("s", [{"role": "user", "content": "ok"}, {"role": "assistant", "content": "Sure, I can run the tests now."}])
    result = mem.dream()
    assert [c.purpose for c in model.calls] == ["sqlite-memory-episode", "sqlite-memory-extract"]  # "ok" is skipped
    assert (result.status, result.counts["episodes"]) == ("updated", 1)


def test_protocol_shaped_calls(make: Factory) -> None:
    """What a harness adapter needs: duck-typed turns, per-call strategy, excluded ids, bm25 scores, record fields."""

    class HarnessTurn:
        def __init__(self, kind: str, text: str) -> None:
            self.kind, self.text = kind, text

    model = ScriptedModel.of([])  # any model call would raise: the heuristic strategy must not call it
    mem = make("fixed", model=model)
    a, b = mem.seed([{"content": "User prefers tea in the morning", "type": "user", "title": "tea", "path": "user_tea.md",
                      "description": "drinks"},
                     {"content": "User prefers green tea", "type": "feedback", "importance": 0.7}])
    mem.add_turns("s", [HarnessTurn("user", "I always drink my tea without sugar, never with milk."),
                        HarnessTurn("assistant", "Noted.")])
    extracted = mem.extract("s", strategy="heuristic")
    assert (extracted.status, extracted.strategy, extracted.fallback_reason) == ("completed", "heuristic", None)
    assert extracted.touched == ("rule",)
    assert model.calls == []
    ranked = mem.recall("tea", 5, "bm25", excluded=[a])
    assert ranked.strategy == "bm25"
    assert a not in [c.memory_id for c in ranked.items]
    assert all(c.score > 0 for c in ranked.items)
    assert mem.dream(strategy="heuristic").strategy == "heuristic"
    docs = {d.id: d for d in mem.documents()}
    assert (docs[a].file_type, docs[a].description, docs[a].title) == ("user", "drinks", "tea")
    assert docs[b].file_type == "feedback"
    assert docs[a].source_ref.startswith("memories:")
    assert model.calls == []


def test_forget_request_words_are_not_required_when_fixed(make: Factory) -> None:
    mem = make("fixed")
    tea, _ = mem.seed([{"content": "User likes green tea"}, {"content": "User likes black coffee"}])
    assert mem.forget("Please forget that I like green tea").removed == (tea,)
    assert [d.text for d in mem.documents()] == ["User likes black coffee"]


@pytest.mark.parametrize("mode", ["seed", "fixed"])
def test_turn_indices_continue_across_sessions_of_the_same_id(make: Factory, mode: str) -> None:
    mem = make(mode)
    assert mem.add_turns("s", [{"role": "user", "content": "first"}, {"role": "assistant", "content": "one"}]) == [0, 1]
    mem.extract("s")
    assert mem.add_turns("s", [{"role": "user", "content": "second"}]) == [2]
    rows = mem.db.conn.execute("SELECT turn_index, content FROM conversation_turns ORDER BY turn_index").fetchall()
    assert [tuple(r) for r in rows] == [(0, "first"), (1, "one"), (2, "second")]


def test_package_house_rules() -> None:
    """No module over 400 lines; only the injected clock tells time (the file-core checks, applied to this package)."""
    for path in (PACKAGE / "sqlite").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert len(text.splitlines()) <= 400, path.name
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Attribute) and node.attr in {"now", "time", "utcnow", "today"}:
                base = node.value
                assert not (isinstance(base, ast.Name) and base.id in {"datetime", "time", "date"}), f"{path.name}:{node.lineno}"
