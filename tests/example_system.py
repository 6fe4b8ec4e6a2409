"""A third-party memory system, written only against the harness protocol (no ``memory_core`` import).

It is the worked example of ``docs/system-protocol.md`` and a tested one: ``tests/harness/test_protocol.py`` runs
the shipped suite's portable scenarios against it through ``memharness run --system tests.example_system:factory``.

Memory is a dict of records in RAM. Extraction keeps user statements that sound durable; recall ranks records by
shared words; dream merges records with the same text; forget removes records that contain every word of the
request. It declares one capability (``dream``), so index, lock, file-path and gate steps are skipped visibly, and
one strategy (``heuristic``), so model-strategy runs are skipped visibly too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from harness.replay import (
    Capability,
    DreamResult,
    ExtractResult,
    ForgetResult,
    MemoryRecord,
    RecallResult,
)
from harness.scenario import SeedMemory, Turn

_WORD = re.compile(r"[a-z0-9][a-z0-9'-]*")
_STOP = frozenset({"the", "a", "an", "and", "or", "but", "to", "of", "in", "on", "for", "with", "at", "by", "from",
                   "is", "are", "was", "were", "be", "been", "it", "this", "that", "these", "those", "i", "me", "my",
                   "we", "our", "you", "your", "please", "can", "could", "would", "should", "will", "do", "does",
                   "did", "what", "how", "about", "forget", "remember", "know", "any", "all", "everything", "else"})
_DURABLE = ("prefer", "always", "never", "remember", "i am", "i'm", "my ", "we use", "our ", "don't", "do not")
_TYPES = {"feedback": ("always", "never", "don't", "do not", "stop", "prefer"),
          "project": ("project", "repo", "service", "deadline", "release", "standup"),
          "reference": ("http", "dashboard", "docs", "wiki", "runbook")}


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in _STOP}


def _kind(text: str) -> str:
    low = text.lower()
    return next((kind for kind, keys in _TYPES.items() if any(k in low for k in keys)), "user")


@dataclass
class _Record:
    id: str
    type: str
    title: str
    description: str
    text: str
    updated: datetime


@dataclass
class ExampleSystem:
    """Everything in memory; time only from the ``now`` arguments."""

    capabilities: frozenset[Capability] = frozenset({Capability.DREAM})
    recall_limit: int = 5
    name: str = "example"
    strategies: frozenset[str] = frozenset({"heuristic"})  # no model path: model-strategy runs are skipped, saying so
    records: dict[str, _Record] = field(default_factory=dict)
    turns: dict[str, list[Turn]] = field(default_factory=dict)
    processed: dict[str, int] = field(default_factory=dict)

    def seed(self, memory: SeedMemory, *, mtime: datetime) -> None:
        self.records[memory.path] = _Record(memory.path, memory.type, memory.name or memory.path,
                                            memory.description, memory.body, mtime)

    def finish_seeding(self, *, now: datetime) -> None:
        return None

    def add_turns(self, session_id: str, turns: Sequence[Turn], *, now: datetime) -> None:
        self.turns.setdefault(session_id, []).extend(turns)

    def extract(self, session_id: str, *, now: datetime, strategy: str, queued_behind: bool = False) -> ExtractResult:
        history = self.turns.get(session_id, [])
        start = self.processed.get(session_id, 0)
        self.processed[session_id] = len(history)
        known = {" ".join(sorted(_words(r.text))) for r in self.records.values()}
        written: list[str] = []
        for turn in history[start:]:
            text = turn.text.strip()
            low = text.lower()
            if turn.kind != "user" or text.endswith("?") or len(text) < 12 or not any(k in low for k in _DURABLE):
                continue
            key = " ".join(sorted(_words(text)))
            if key in known:
                continue
            known.add(key)
            kind = _kind(text)
            rid = f"{kind}/{len(self.records):04d}.md"
            self.records[rid] = _Record(rid, kind, text[:60], "", text, now)
            written.append(rid)
        touched = tuple(sorted({self.records[r].type for r in written}))
        return ExtractResult("completed", "heuristic", touched=touched, written=tuple(written))

    def dream(self, session_id: str, *, now: datetime, strategy: str, force: bool = False) -> DreamResult:
        seen: dict[str, str] = {}
        removed = 0
        for rid in sorted(self.records, key=lambda r: self.records[r].updated, reverse=True):
            key = " ".join(sorted(_words(self.records[rid].text)))
            if key in seen:
                del self.records[rid]
                removed += 1
            else:
                seen[key] = rid
        return DreamResult("updated" if removed else "noop", "heuristic", deduped=removed)

    def recall(self, query: str, *, now: datetime, limit: int | None, excluded: Sequence[str],
               strategy: str) -> RecallResult:
        limit = limit or self.recall_limit
        wanted = _words(query)
        scored = []
        for r in self.records.values():
            if r.id in excluded:
                continue
            score = len(wanted & _words(f"{r.title} {r.description} {r.text}"))
            if score:
                scored.append((score, r.updated, r.id))
        scored.sort(reverse=True)
        chosen = scored[:limit]
        return RecallResult(selected=tuple(rid for _, _, rid in chosen), strategy="heuristic" if chosen else "none",
                            scores=tuple(float(s) for s, _, _ in chosen))

    def forget(self, query: str, *, now: datetime, strategy: str) -> ForgetResult:
        wanted = _words(query)
        gone = [r.id for r in self.records.values()
                if wanted and wanted <= _words(f"{r.title} {r.description} {r.text}")]
        for rid in gone:
            del self.records[rid]
        return ForgetResult(removed=tuple(gone), strategy="heuristic")

    def documents(self) -> list[MemoryRecord]:
        return [MemoryRecord(id=r.id, type=r.type, title=r.title, text=r.text, description=r.description,
                             source=f"memory:{r.id}", updated_at=r.updated) for r in self.records.values()]


def factory(workdir: Path, clock: Any, model: Any, events: Any) -> ExampleSystem:
    """``memharness run --system tests.example_system:factory``."""
    return ExampleSystem()
