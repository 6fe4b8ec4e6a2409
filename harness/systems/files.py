"""The reference core (``memory_core.files``, the file system) as a system under test: an adapter onto the harness
protocol.

It is one implementation of ``harness.system.MemorySystem`` among others (``--system package.module:factory``);
see ``docs/system-protocol.md``.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from harness.errors import HarnessError, ScenarioInputError, call_plugin, plain_number, shown
from harness.scenario import RANKED_STRATEGIES, SeedMemory, Turn, ranker_plugin, raw_text
from harness.system import (
    ALL_CAPABILITIES,
    Capability,
    DreamResult,
    ExtractResult,
    ForgetResult,
    MemoryRecord,
    RecallResult,
    RecordEntry,
)
from harness.systems import SEED_FIELDS
from harness.systems.faulty_store import FaultyStore
from harness.systems.store_watch import StoreWatch, watched
from memory_core.clock import FixedClock
from memory_core.events import EventSink
from memory_core.files.dream import DreamScheduler
from memory_core.files.entries import parse_entries
from memory_core.files.extract import ExtractOutcome, ExtractRequest, ExtractScheduler
from memory_core.files.forget import forget
from memory_core.files.formats import ms_to_ns, to_ms
from memory_core.files.history import ChatMessage, ToolCall
from memory_core.files.index import rebuild_index, truncate_index_for_prompt
from memory_core.files.rankers import DenseCache, Ranker, make_ranker
from memory_core.files.ranking import Ranked, top
from memory_core.files.recall import recall
from memory_core.files.scan import DocCache, scan
from memory_core.files.sessions import ChatDirSessions
from memory_core.files.snapshot import RecallCache
from memory_core.files.store import CURSOR_KEY, INDEX_KEY, LOCK_KEY, META_KEY, FileStore, check_key
from memory_core.files.topic import TopicDoc, render_topic
from memory_core.model import Model

DEAD_PID = 2**22 + 12_345  # above the default pid_max: never a live process


def _stamp(path: str | Path, moment: datetime, *, follow_symlinks: bool = True) -> None:
    """Give a file the harness clock's ``moment`` as its mtime (and atime), as a process at that time would have."""
    ns = ms_to_ns(to_ms(moment))
    os.utime(path, ns=(ns, ns), follow_symlinks=follow_symlinks)


def session_uuid(session: str) -> str:
    """A stable UUID for a scenario session name, so session files match the scanner's pattern (spec §6.2)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"memharness:{session}"))


@dataclass(frozen=True)
class PluginRanker:
    """A plugin strategy (``harness.plugins.ranker``) as the core's ranker: it scores each topic file as a
    ``MemoryRecord``; the docs scoring above 0 are recalled, best first, ties in scan order, cut to the limit. A wrong
    answer or an exception is an error naming the plugin."""

    name: str
    score: Callable[..., object]

    def rank(self, query: str, docs: Sequence[TopicDoc], *, limit: int) -> list[Ranked]:
        what = f"plugin strategy {self.name}"
        values = call_plugin(what, self.score, query, [MemoryRecord(d.relative_path, d.type, d.title, d.body,
                                                                     d.description, d.relative_path) for d in docs])
        # read as plain copies inside the plugin's blame (round 12: a len, an iteration or a float that raised, or an
        # int too large for a float, was reported as the system under test failing, exit 1)
        items = call_plugin(what, list, values) if isinstance(values, Sequence) and not isinstance(values, str) else None
        numbers = [plain_number(v) if not isinstance(v, bool) else None for v in items or ()]
        if items is None or len(items) != len(docs) or None in numbers:
            raise HarnessError(f"{what} returned {type(values).__name__} {shown(items if items is not None else values, 80)};"
                               f" expected one finite number per doc ({len(docs)})")
        return top([n for n in numbers if n is not None], docs, limit=limit, threshold=0.0)


@watched(reads=("seed", "finish_seeding", "add_turns", "index_text", "loaded_index", "lock_held", "scan_count",
                "stray_files", "plant_lock", "plant_state", "system_check", "inject_fault"))  # store_watch.py: its
# store vanished (seeding makes the memory root: the watch takes it then)
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
    dense: DenseCache = field(default_factory=DenseCache)
    """The MiniLM ranker and its embedding cache, shared by every system one factory builds (``factory_for``)."""
    _cache: DocCache = field(default_factory=RecallCache)
    _rankers: dict[str, Ranker] = field(default_factory=dict)
    capabilities: frozenset[Capability] = ALL_CAPABILITIES - {Capability.RECALL_OPTIONS, Capability.FORGET_OPTIONS}
    name: str = "reference"
    design: str = "qwen-file"
    recall_limit: int = 5
    """Spec §7.1: at most 5 memories. Stated here from the spec, never read from memory_core's constant, so a
    changed constant in the core is caught by every probe that checks the bound."""

    def __post_init__(self) -> None:
        self.root = self.workdir / "project" / ".qwen" / "memory"
        self.chats = self.workdir / "project" / ".qwen" / "chats"
        self.chats.mkdir(parents=True, exist_ok=True)
        self.watch = StoreWatch(self.workdir, "memory store", (self.root.parent, self.root))
        self.faulty = FaultyStore(FileStore(self.root, self.clock))
        self.store = self.faulty  # type: ignore[assignment]  # a FileStore in every respect but injected faults
        self._extract = ExtractScheduler(self.store, str(self.root), model=self.model, events=self.events,
                                         cache=self._cache)
        self._dream = DreamScheduler(self.store, ChatDirSessions(self.chats), model=self.model, events=self.events,
                                     cache=self._cache)

    def seed(self, memory: SeedMemory, *, mtime: datetime) -> None:
        unknown = sorted(set(memory.system) - set().union(*SEED_FIELDS.values()))  # another system's: ignored
        if unknown:  # fix: a field no shipped system reads (a typo) was ignored in silence
            raise ScenarioInputError(f"memory {memory.path}: unknown system field(s) {', '.join(unknown)} (known: "
                                     "special, with to for a symlink; the SQLite system's are ignored here)")
        raw = raw_text(memory)
        text = raw if raw is not None else render_topic(
            name=memory.name or memory.path, description=memory.description, kind=memory.type,  # type: ignore[arg-type]
            body=memory.body)
        # as an earlier process left it: plain writes into this scenario's fresh scratch directory (no temp file, no
        # fsync: nothing here outlives the scenario, and nothing reads it before seeding ends); the loader has
        # refused every path that leaves the memory root, and check_key normalises the rest
        target = self.root / check_key(memory.path)
        target.parent.mkdir(parents=True, exist_ok=True)
        special = memory.system.get("special")
        if special is None and "to" in memory.system:
            raise ScenarioInputError(f"memory {memory.path}: system.to needs special: symlink")
        if special is not None:
            planted = self._special(memory, target, text.encode("utf-8"), mtime)
            if planted is None:
                return
            target = planted
        else:
            target.write_bytes(text.encode("utf-8"))
        _stamp(target, mtime, follow_symlinks=False)

    def _special(self, memory: SeedMemory, target: Path, data: bytes, mtime: datetime) -> Path | None:
        """What another program left where a topic file belongs: a FIFO (it must not hang a reader), a symbolic link
        (``to``: relative to the memory root, possibly leaving it, with the memory's text written there), or a file
        whose name is not UTF-8 (its Latin-1 bytes). Returns the path whose mtime to set, or None."""
        where = f"memory {memory.path}: system"
        fields = {"fifo": {"special"}, "symlink": {"special", "to"}, "latin1_name": {"special"}}
        special = memory.system["special"]
        if special not in fields:
            raise ScenarioInputError(f"{where}.special must be one of {', '.join(fields)}, got {special!r}")
        if set(memory.system) != fields[str(special)]:
            raise ScenarioInputError(f"{where}: special: {special} takes exactly {', '.join(sorted(fields[str(special)]))}")
        if special == "fifo":
            os.mkfifo(target)
            return None
        if special == "latin1_name":
            try:
                name = memory.path.encode("latin-1")
            except UnicodeEncodeError:
                raise ScenarioInputError(f"{where}: latin1_name needs a path Latin-1 can spell") from None
            if name.isascii():
                raise ScenarioInputError(f"{where}: latin1_name needs a non-ASCII character in the path")
            raw = os.path.join(os.fsencode(self.root), name)
            os.makedirs(os.path.dirname(raw), exist_ok=True)
            with open(raw, "wb") as handle:
                handle.write(data)
            return Path(os.fsdecode(raw))
        to = memory.system["to"]
        dest = Path(os.path.normpath(self.root / str(to)))
        if not isinstance(to, str) or not to or dest == target or self.workdir not in dest.parents:
            raise ScenarioInputError(f"{where}.to must be a path relative to the memory root that stays inside the "
                                     f"scenario's scratch directory and is not the link itself, got {to!r}")
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
            _stamp(dest, mtime)
        os.symlink(dest, target)
        return target

    def finish_seeding(self, *, now: datetime) -> None:
        # a scenario that seeds MEMORY.md itself keeps it as written (a hand-edited index); otherwise the index is
        # rebuilt as a previous session would have left it (spec §4.2)
        if self.store.list() and INDEX_KEY not in self.store.list():
            self.faulty.inner.durable = False  # set-up of a scratch directory, like the seeds themselves
            try:
                rebuild_index(self.store, cache=self._cache)
            finally:
                self.faulty.inner.durable = True

    def add_turns(self, session_id: str, turns: Sequence[Turn], *, now: datetime) -> None:
        history = self.histories.setdefault(session_id, [])
        for turn in turns:
            if turn.kind == "user":
                history.append(ChatMessage("user", turn.text))
            elif turn.kind == "assistant":  # its tool calls are the agent's (a write to memory skips extraction)
                calls = tuple(ToolCall(c.name, dict(c.input)) for c in turn.tool_calls)
                history.append(ChatMessage("model", turn.text, calls))
            else:
                call = ToolCall("write_file", {"file_path": str(self.root / turn.text)})
                history.append(ChatMessage("model", "", (call,)))
        path = self.chats / f"{session_uuid(session_id)}.jsonl"
        with path.open("a", encoding="utf-8") as handle:
            for turn in turns:
                handle.write(json.dumps({"type": turn.kind, "text": turn.text}) + "\n")
        _stamp(path, now)

    def extract(self, session_id: str, *, now: datetime, strategy: str, queued_behind: bool = False) -> ExtractResult:
        self._extract.model = self._model_for(strategy)
        request = ExtractRequest(session_uuid(session_id), tuple(self.histories.get(session_id, [])))
        if queued_behind and not self._extract.holding:  # a lone queued request: its own in-flight extraction
            with self._extract.hold():
                out = self._extract.schedule(request, now=now)
        else:
            out = self._extract.schedule(request, now=now)
        return _extract_result(out)

    def hold_extractions(self, *, now: datetime) -> None:
        self._extract.begin_hold()

    def release_extractions(self, *, now: datetime) -> list[tuple[str, ExtractResult]]:
        names = {session_uuid(s): s for s in self.histories}
        return [(names.get(sid, sid), _extract_result(out)) for sid, out in self._extract.release()]

    def dream(self, session_id: str, *, now: datetime, strategy: str, force: bool = False) -> DreamResult:
        self._dream.model = self._model_for(strategy)
        out = self._dream.schedule(now=now, session_id=session_uuid(session_id), force=force)
        return DreamResult(status=out.status, strategy=out.strategy, reason=out.skipped_reason,
                           fallback_reason=out.fallback_reason, touched=out.touched_topics, deduped=out.deduped_entries,
                           error=out.error, warnings=out.warnings)

    def _ranker_for(self, strategy: str) -> Ranker | None:
        if strategy not in RANKED_STRATEGIES:
            return None
        if strategy not in self._rankers:
            plugin = ranker_plugin(strategy)
            self._rankers[strategy] = make_ranker(strategy, dense=self.dense) if plugin is None \
                else PluginRanker(strategy, plugin)
        return self._rankers[strategy]

    def _model_for(self, strategy: str) -> Model | None:
        return self.model if strategy == "model" else None

    def recall(self, query: str, *, now: datetime, limit: int | None, excluded: Sequence[str],
               strategy: str) -> RecallResult:
        kwargs = {"model": self._model_for(strategy), "excluded": set(excluded), "events": self.events,
                  "cache": self._cache, "ranker": self._ranker_for(strategy)}
        if limit is None:  # the core's own limit
            out = recall(self.store, query, now=now, **kwargs)  # type: ignore[arg-type]
        else:
            out = recall(self.store, query, now=now, limit=limit, **kwargs)  # type: ignore[arg-type]
        return RecallResult(selected=tuple(d.relative_path for d in out.selected), strategy=out.strategy,
                            fallback_reason=out.fallback_reason, scores=out.scores, prompt=out.prompt)

    def forget(self, query: str, *, now: datetime, strategy: str) -> ForgetResult:
        out = forget(self.store, query, now=now, model=self._model_for(strategy), events=self.events, cache=self._cache)
        return ForgetResult(removed=tuple(c.id for c in out.removed), strategy=out.strategy,
                            fallback_reason=out.fallback_reason, touched=out.touched_topics, warnings=out.warnings,
                            details={"message": out.system_message or ""})

    def plant_lock(self, pid: str, *, mtime: datetime) -> None:
        path = self.root.parent / "consolidation.lock"
        if path.is_dir() and not path.is_symlink():  # an earlier step planted a directory there
            path.rmdir()
        if pid == "none":
            self.store.delete(LOCK_KEY)
            return
        if pid in ("not_utf8", "directory"):  # what another program could leave where the lock file belongs
            self.store.delete(LOCK_KEY)
            if pid == "directory":
                path.mkdir()
            else:
                path.write_bytes(b"\xff\xfe4242\n")
            _stamp(path, mtime)
            return
        self.store.write(LOCK_KEY, pid if pid.isdigit() else str(os.getpid() if pid == "live" else DEAD_PID))
        self.store.set_mtime(LOCK_KEY, to_ms(mtime))

    def topic_docs(self) -> list[TopicDoc]:
        """The core's own view: every topic doc (no 200 cap)."""
        # the harness observes the files as they are: through the store beneath the injected faults, so looking
        # never fires (or uses up) a fault meant for the system's own operations
        return list(scan(self.faulty.inner, cache=self._cache, limit=None).docs)

    def documents(self) -> list[MemoryRecord]:
        return [_record(d) for d in self.topic_docs()]

    def stray_files(self) -> list[str]:
        allowed = {self.root, self.chats}
        state = {self.root.parent / name for name in ("meta.json", "extract-cursor.json", "consolidation.lock")}
        stray = []
        for path in sorted(self.workdir.rglob("*")):
            if path.is_file() and path not in state and not any(a == path or a in path.parents for a in allowed):
                stray.append(str(path.relative_to(self.workdir)))
        return stray

    def plant_state(self, file: str, text: str, *, mtime: datetime) -> None:
        """Capability ``state_files``: overwrite ``meta.json`` or the extract cursor, as a crash or a hand edit would."""
        key = _STATE[file]
        self.faulty.inner.write(key, text)
        self.faulty.inner.set_mtime(key, to_ms(mtime))

    def system_check(self, name: str, expected: str | int | float | bool) -> str | None:  # noqa: FBT001
        """Capability ``system_checks``: ``meta_contains`` / ``meta_lacks`` / ``cursor_contains`` / ``cursor_lacks``
        (a phrase in the state file's text, as on disk; a missing file contains nothing)."""
        file, _, verb = name.partition("_")
        known = file in _STATE and verb in ("contains", "lacks")
        if not known or not isinstance(expected, str) or not expected.strip():  # the scenario's error: validate finds
            problem = f"expected a phrase, got {expected!r:.60}" if known else "unknown check"  # it too ("": round 17)
            raise ScenarioInputError(f"check system.{name}: {problem} (known: meta_contains, meta_lacks, cursor_contains, "
                                     "cursor_lacks, each with a phrase)")
        try:
            text = self.faulty.inner.read(_STATE[file])
        except FileNotFoundError:
            text = ""
        if (expected in text) == (verb == "contains"):
            return None
        shown = text if len(text) <= 300 else text[:300] + "…"
        return f"{_STATE[file].removeprefix('../')} {'lacks' if verb == 'contains' else 'contains'} {expected!r}: {shown!r}"

    def inject_fault(self, kind: str, match: str, times: int) -> None:
        """Capability ``io_faults``: arm a store fault (``write_error`` / ``vanish``) for matching keys."""
        self.faulty.inject(kind, match, times)

    def lock_held(self) -> bool:
        """Capability ``locks``: a consolidation lock file exists now."""
        return self.store.stat(LOCK_KEY) is not None

    def index_text(self) -> str:
        try:
            return self.store.read(INDEX_KEY)
        except FileNotFoundError:
            return ""

    def loaded_index(self) -> str:
        return truncate_index_for_prompt(self.index_text())

    def scan_count(self) -> int:
        """Docs the core's own scan sees (≤ 200)."""
        return len(scan(self.store, cache=self._cache).docs)



def _record(doc: TopicDoc) -> MemoryRecord:
    entries = tuple(RecordEntry(e.summary, e.why or "", e.how_to_apply or "") for e in parse_entries(doc.body))
    return MemoryRecord(id=doc.relative_path, type=doc.type or "", title=doc.title, text=doc.body,
                        description=doc.description, source=doc.relative_path, entries=entries,
                        updated_at=datetime.fromtimestamp(doc.mtime_ms / 1000, UTC))


def factory_for(variant: str = "") -> Callable[[Path, FixedClock, Model | None, EventSink], ReferenceSystem]:
    """A reference-core factory with its own ``DenseCache`` (one per worker process: the MiniLM model loads once)."""
    if variant:
        raise ValueError(f"the reference system has no variant {variant!r}")
    dense = DenseCache()

    def factory(workdir: Path, clock: FixedClock, model: Model | None, events: EventSink) -> ReferenceSystem:
        return ReferenceSystem(workdir, clock, model, events, dense=dense)

    return factory


reference_factory = factory_for()
"""The default system under test: the reference core (its DenseCache shared by everything it builds)."""


_STATE = {"meta": META_KEY, "cursor": CURSOR_KEY}


def _extract_result(out: ExtractOutcome) -> ExtractResult:
    return ExtractResult(status=out.status, strategy=out.strategy, reason=out.skipped_reason,
                         fallback_reason=out.fallback_reason, touched=out.touched_topics, written=out.written,
                         error=out.error, warnings=out.warnings, details={"message": out.system_message or ""})
