"""A small mutation test of the shipped suite: breaking any one core rule must turn the default run red."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from memory_core.files.entries import parse_entries
from memory_core.files.topic import TopicDoc
from tests.property.test_dedupe_equivalence import dedupe_entries

pytestmark = pytest.mark.slow  # replays the whole shipped suite once per mutation

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
recall_mod = importlib.import_module("memory_core.files.recall")
patches_mod = importlib.import_module("memory_core.files.patches")
dream_mod = importlib.import_module("memory_core.files.dream")
dedupe_mod = importlib.import_module("memory_core.files.dedupe")
forget_mod = importlib.import_module("memory_core.files.forget")
index_mod = importlib.import_module("memory_core.files.index")


def _score_plus_one(tokens: Any, doc: TopicDoc) -> int:
    body = doc.normalized_body
    hay = " ".join((doc.type, doc.title, doc.description, body)).lower()
    kw = recall_mod.TYPE_KEYWORDS[doc.type]
    return sum((1 if t in hay else 0) + (1 if t in kw else 0) for t in tokens) + (1 if body else 0)


def _within_file_only(docs: Any) -> Any:
    plan = dedupe_mod.plan_dedupe([])
    bodies, removed = {}, 0
    for d in docs:
        entries = parse_entries(d.body)
        folded = dedupe_entries(entries)
        removed += len(entries) - len(folded)
        rendered = dedupe_mod.render_entries(folded)
        if rendered != d.body:
            bodies[d.relative_path] = rendered
    touched = tuple(sorted({d.type for d in docs if d.relative_path in bodies}))
    return type(plan)(bodies, (), removed, touched)


def _forget_whole_file(store: Any, matches: Any, *, now: Any, cache: Any = None) -> Any:
    removed, touched = [], []
    for m in matches:
        if store.delete(m.relative_path) or m in removed:
            removed.append(m)
            touched.append(m.topic)
    if removed:
        index_mod.rebuild_index(store)
    return removed, list(dict.fromkeys(touched))


MUTATIONS: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    "+2 substring score becomes +1": lambda mp: mp.setattr(recall_mod, "score_doc", _score_plus_one),
    "12-character filter becomes 11": lambda mp: mp.setattr(patches_mod, "MIN_CANDIDATE_LENGTH", 11),
    "transient keyword list loses 'currently'": lambda mp: mp.setattr(
        patches_mod, "TRANSIENT", re.compile(r"\b(today|now|for this task|this session|temporary|temporarily)\b", re.I)),
    "24-hour gate becomes 12 hours": lambda mp: mp.setattr(dream_mod, "DEFAULT_MIN_HOURS", 12.0),
    "5-session gate becomes 4": lambda mp: mp.setattr(dream_mod, "DEFAULT_MIN_SESSIONS", 4),
    "cross-file dedupe removed": lambda mp: mp.setattr(dream_mod, "plan_dedupe", _within_file_only),
    "per-entry forget becomes whole-file": lambda mp: mp.setattr(forget_mod, "delete_matches", _forget_whole_file),
    "150-char index line cap becomes 400": lambda mp: mp.setattr(index_mod, "MAX_INDEX_LINE_CHARS", 400),
}


def test_unmutated_suite_passes(tmp_path: Path) -> None:
    assert main(["run", str(SCENARIOS), "--out", str(tmp_path / "o")], environ={}) == 0


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_each_mutation_turns_the_default_run_red(name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    MUTATIONS[name](monkeypatch)
    code = main(["run", str(SCENARIOS), "--out", str(tmp_path / "o")], environ={})
    out = capsys.readouterr().out
    assert code != 0, f"mutation survived: {name}"
    assert "FAILED:" in out
