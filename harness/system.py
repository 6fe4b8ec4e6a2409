"""The system under test: the ``MemorySystem`` protocol the replay runner drives, and the reference core behind it.

Plug in your own memory system by implementing ``MemorySystem`` and passing a factory
(``memharness run --system package.module:factory``); see README "Testing your own memory system".
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Protocol

from harness.scenario import SeedMemory, Turn
from memory_core.clock import FixedClock
from memory_core.dream import DreamScheduler
from memory_core.events import EventSink
from memory_core.extract import ExtractRequest, ExtractScheduler
from memory_core.forget import forget
from memory_core.formats import to_ms
from memory_core.history import ChatMessage, ToolCall
from memory_core.index import rebuild_index
from memory_core.model import Model
from memory_core.rankers import Ranker, make_rankers
from memory_core.recall import recall
from memory_core.scan import DocCache, scan
from memory_core.sessions import ChatDirSessions
from memory_core.store import INDEX_KEY, LOCK_KEY, FileStore
from memory_core.topic import TopicDoc, render_topic

DEAD_PID = 2**22 + 12_345  # above the default pid_max: never a live process
RANKED_STRATEGIES = ("bm25", "embedding", "hybrid")
_SHARED_DENSE: dict[str, Ranker] = {}


def make_ranker(strategy: str) -> Ranker:
    """The ranker behind a ranked strategy; the MiniLM ranker (and its embedding cache) is shared per process."""
    if strategy != "bm25" and "dense" not in _SHARED_DENSE:
        _SHARED_DENSE["dense"] = make_rankers(["embedding"])["embedding"]
    return make_rankers([strategy], dense=_SHARED_DENSE.get("dense"))[strategy]


@dataclass(frozen=True, slots=True)
class OpResult:
    """What one memory operation did, in the terms probes and expectations use."""

    status: str
    strategy: str = "heuristic"
    reason: str | None = None
    fallback_reason: str | None = None
    touched: tuple[str, ...] = ()
    deduped: int = 0
    selected: tuple[str, ...] = ()
    """Recall: relative paths in rank order. Forget: removed entry ids."""
    prompt: str = ""
    error: str | None = None
    scores: tuple[float, ...] = ()
    """Recall with a ranked strategy: the score of each selected memory."""


class MemorySystem(Protocol):
    """What the replay runner needs from a memory system (the reference core is one implementation)."""

    def seed(self, memory: SeedMemory, *, mtime: datetime) -> None:
        """Write a topic file as if an earlier session had left it."""
        ...

    def finish_seeding(self, *, now: datetime) -> None:
        """Called once after seeding (the reference core rebuilds its index here)."""
        ...

    def add_turns(self, session_id: str, turns: Sequence[Turn], *, now: datetime) -> None:
        """Append turns to a session's transcript."""
        ...

    def extract(self, session_id: str, *, now: datetime, strategy: str, queued_behind: bool = False) -> OpResult:
        """Run extraction for the session's unprocessed turns."""
        ...

    def dream(self, session_id: str, *, now: datetime, strategy: str, force: bool = False) -> OpResult:
        """Request consolidation as session ``session_id``."""
        ...

    def recall(self, query: str, *, now: datetime, limit: int, excluded: Sequence[str], strategy: str) -> OpResult:
        """Select relevant memories for ``query`` with ``strategy``."""
        ...

    def forget(self, query: str, *, now: datetime, strategy: str) -> OpResult:
        """Forget entries matching ``query`` with ``strategy``."""
        ...

    def plant_lock(self, pid: str, *, mtime: datetime) -> None:
        """Leave a consolidation lock held by a ``live`` or ``dead`` process (or remove it: ``none``)."""
        ...

    def documents(self) -> list[TopicDoc]:
        """Every topic doc now in the store (no 200 cap)."""
        ...

    def stray_files(self) -> list[str]:
        """Files the system wrote outside its memory root and state files (must stay empty)."""
        ...

    def index_text(self) -> str:
        """The current ``MEMORY.md``."""
        ...


def session_uuid(session: str) -> str:
    """A stable UUID for a scenario session name, so session files match the scanner's pattern (spec §6.2)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"memharness:{session}"))


@dataclass
class ReferenceSystem:
    """The reference memory core on disk under ``workdir``, with a fake clock and an optional model."""

    workdir: Path
    clock: FixedClock
    model: Model | None
    events: EventSink
    root: Path = field(init=False)
    store: FileStore = field(init=False)
    histories: dict[str, list[ChatMessage]] = field(default_factory=dict)
    _extract: ExtractScheduler = field(init=False)
    _dream: DreamScheduler = field(init=False)
    _cache: DocCache = field(default_factory=DocCache)
    _rankers: dict[str, Ranker] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root = self.workdir / "project" / ".qwen" / "memory"
        self.chats = self.workdir / "project" / ".qwen" / "chats"
        self.chats.mkdir(parents=True, exist_ok=True)
        self.store = FileStore(self.root, self.clock)
        self._extract = ExtractScheduler(self.store, str(self.root), model=self.model, events=self.events,
                                         cache=self._cache)
        self._dream = DreamScheduler(self.store, ChatDirSessions(self.chats), model=self.model, events=self.events,
                                     cache=self._cache)

    def seed(self, memory: SeedMemory, *, mtime: datetime) -> None:
        text = memory.raw if memory.raw is not None else render_topic(
            name=memory.name or memory.path, description=memory.description, kind=memory.type,  # type: ignore[arg-type]
            body=memory.body)
        self.store.write(memory.path, text)
        self.store.set_mtime(memory.path, to_ms(mtime))

    def finish_seeding(self, *, now: datetime) -> None:
        if self.store.list():
            rebuild_index(self.store, cache=self._cache)

    def add_turns(self, session_id: str, turns: Sequence[Turn], *, now: datetime) -> None:
        history = self.histories.setdefault(session_id, [])
        for turn in turns:
            if turn.kind == "user":
                history.append(ChatMessage("user", turn.text))
            elif turn.kind == "assistant":
                history.append(ChatMessage("model", turn.text))
            else:
                call = ToolCall("write_file", {"file_path": str(self.root / turn.text)})
                history.append(ChatMessage("model", "", (call,)))
        path = self.chats / f"{session_uuid(session_id)}.jsonl"
        with path.open("a", encoding="utf-8") as handle:
            for turn in turns:
                handle.write(json.dumps({"type": turn.kind, "text": turn.text}) + "\n")
        ns = int(to_ms(now) * 1e6)
        os.utime(path, ns=(ns, ns))

    def extract(self, session_id: str, *, now: datetime, strategy: str, queued_behind: bool = False) -> OpResult:
        self._extract.model = self._model_for(strategy)
        request = ExtractRequest(session_uuid(session_id), tuple(self.histories.get(session_id, [])))
        if queued_behind:
            with self._extract.hold():
                out = self._extract.schedule(request, now=now)
        else:
            out = self._extract.schedule(request, now=now)
        return OpResult(out.status, out.strategy, out.skipped_reason, out.fallback_reason, out.touched_topics,
                        selected=out.written, error=out.error)

    def dream(self, session_id: str, *, now: datetime, strategy: str, force: bool = False) -> OpResult:
        self._dream.model = self._model_for(strategy)
        out = self._dream.schedule(now=now, session_id=session_uuid(session_id), force=force)
        return OpResult(out.status, out.strategy, out.skipped_reason, out.fallback_reason, out.touched_topics,
                        out.deduped_entries, error=out.error)

    def _ranker_for(self, strategy: str) -> Ranker | None:
        if strategy not in RANKED_STRATEGIES:
            return None
        if strategy not in self._rankers:
            self._rankers[strategy] = make_ranker(strategy)
        return self._rankers[strategy]

    def _model_for(self, strategy: str) -> Model | None:
        return self.model if strategy == "model" else None

    def recall(self, query: str, *, now: datetime, limit: int, excluded: Sequence[str], strategy: str) -> OpResult:
        out = recall(self.store, query, now=now, model=self._model_for(strategy), excluded=set(excluded), limit=limit,
                     events=self.events, cache=self._cache, ranker=self._ranker_for(strategy))
        return OpResult("completed", out.strategy, fallback_reason=out.fallback_reason,
                        selected=tuple(d.relative_path for d in out.selected), prompt=out.prompt, scores=out.scores)

    def forget(self, query: str, *, now: datetime, strategy: str) -> OpResult:
        out = forget(self.store, query, now=now, model=self._model_for(strategy), events=self.events, cache=self._cache)
        return OpResult("completed", out.strategy, fallback_reason=out.fallback_reason, touched=out.touched_topics,
                        selected=tuple(c.id for c in out.removed))

    def plant_lock(self, pid: str, *, mtime: datetime) -> None:
        if pid == "none":
            self.store.delete(LOCK_KEY)
            return
        self.store.write(LOCK_KEY, str(os.getpid() if pid == "live" else DEAD_PID))
        self.store.set_mtime(LOCK_KEY, to_ms(mtime))

    def documents(self) -> list[TopicDoc]:
        return list(scan(self.store, cache=self._cache, limit=None).docs)

    def stray_files(self) -> list[str]:
        allowed = {self.root, self.chats}
        state = {self.root.parent / name for name in ("meta.json", "extract-cursor.json", "consolidation.lock")}
        stray = []
        for path in sorted(self.workdir.rglob("*")):
            if path.is_file() and path not in state and not any(a == path or a in path.parents for a in allowed):
                stray.append(str(path.relative_to(self.workdir)))
        return stray

    def index_text(self) -> str:
        try:
            return self.store.read(INDEX_KEY)
        except FileNotFoundError:
            return ""

    def scan_count(self) -> int:
        """Docs the core's own scan sees (≤ 200)."""
        return len(scan(self.store, cache=self._cache).docs)

