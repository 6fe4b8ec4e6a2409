"""The SQLite + FTS5 memory (``memory_core.sqlite``, OpenAkita memory v2) as a system under test.

It plugs in through the public protocol only, as a third party's system would (``--system sqlite`` for the fixed
mode, ``--system sqlite:seed`` for the seed, bugs included, or any ``Quirks.parse`` string such as
``sqlite:fixed+q1_decay_priority_case``). Caps and limits come from the SQLite spec (s1-sqlite-memory-spec.md) and
are stated here, never read from the port's constants, so a changed constant in the port is caught.

Seed pass-through (``memories[i].system``): ``importance``, ``subject``, ``predicate``, ``priority`` (kept as written,
so ``SHORT_TERM`` plants a Q24 row), ``duration`` (``permanent``/``7d``/``24h``/``session``, from the seeding
moment), ``expires_in`` (signed, e.g. ``-1h``), ``id`` (re-seeding an id is an update in place), ``via: add_memory``
(the manual tool: priority TTL, §3.6), ``queue: processing|pending`` (plant an extraction-queue row, its
``last_attempted_at`` = the memory's mtime, instead of a memory).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final

from harness.replay._protocol import Capability, DreamResult, ExtractResult, ForgetResult, MemoryRecord, RecallResult
from harness.scenario import SeedMemory, Turn
from memory_core.sqlite import Quirks, SqliteMemory

RECALL_LIMIT: Final = 20
"""Spec §4.2: ``retrieve_candidates(…, limit=20)``."""
MEMORY_MD_ITEM_CHARS: Final = 1500
"""Spec §5.5: rendered item characters (headers and newlines excluded) ≤ 1500."""
MEMORY_MD_ITEMS_PER_TYPE: Final = 5
INJECTED_MAX_CHARS: Final = 900
"""Spec §4.7: ``min(1500 // 2, 300) * 3`` characters injected."""
SEED_FIELDS: Final = frozenset({"importance", "subject", "predicate", "priority", "duration", "expires_in", "id", "via",
                                "queue"})
_DELTA: Final = re.compile(r"^(-?\d+(?:\.\d+)?)([smhd])$")
_UNITS: Final = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
_STRATEGIES: Final = {"heuristic": "heuristic", "model": "model", "bm25": "bm25"}


def _delta(value: object, field: str) -> timedelta:
    m = _DELTA.match(str(value))
    if m is None:
        raise ValueError(f"{field}: expected a signed duration like -1h, 30m or 3d, got {value!r}")
    return timedelta(**{_UNITS[m.group(2)]: float(m.group(1))})


class SqliteSystem:
    """``SqliteMemory`` behind ``harness.replay.MemorySystem`` (capabilities: dream, recall_prompt, system_checks)."""

    name = "sqlite"
    recall_limit = RECALL_LIMIT
    capabilities = frozenset({Capability.DREAM, Capability.RECALL_PROMPT, Capability.SYSTEM_CHECKS})

    def __init__(self, workdir: Path, clock: Any, model: Any, events: Any, quirks: Quirks) -> None:
        self.clock = clock
        ids = random.Random(0)  # ids drawn the same way in every replay: probes and reports are reproducible
        self.mem = SqliteMemory(workdir / "openakita.db", clock, model, quirks, events,
                                identity_dir=workdir / "identity", id_factory=lambda: f"{ids.getrandbits(128):032x}")

    def seed(self, memory: SeedMemory, *, mtime: datetime) -> None:
        extra = dict(memory.system)
        unknown = sorted(set(extra) - SEED_FIELDS)
        if unknown:
            raise ValueError(f"memory {memory.path}: unknown system field(s) {', '.join(unknown)} "
                             f"(known: {', '.join(sorted(SEED_FIELDS))})")
        body = "\n".join(x for x in (memory.description, memory.body) if x) or memory.name or memory.path
        if "queue" in extra:
            self.mem.plant_queue_row(memory.path, body, status=str(extra["queue"]), last_attempted_at=mtime)
            return
        if extra.get("via") == "add_memory":
            self.mem.add_memory(body, memory.type, float(extra.get("importance", 0.5)))
            return
        if "via" in extra:
            raise ValueError(f"memory {memory.path}: system.via must be add_memory, got {extra['via']!r}")
        record: dict[str, Any] = {"content": body, "type": memory.type, "title": memory.name, "path": memory.path,
                                  "description": memory.description, "facts": list(memory.facts),
                                  "created_at": mtime, "updated_at": mtime, "id": extra.pop("id", memory.path)}
        if "expires_in" in extra:
            record["expires_at"] = self.clock.now() + _delta(extra.pop("expires_in"), f"memory {memory.path}: expires_in")
        self.mem.seed([{**record, **extra}])

    def finish_seeding(self, *, now: datetime) -> None:
        return None

    def add_turns(self, session_id: str, turns: Sequence[Turn], *, now: datetime) -> None:
        self.mem.add_turns(session_id, turns)

    def extract(self, session_id: str, *, now: datetime, strategy: str, queued_behind: bool = False) -> ExtractResult:
        r = self.mem.extract(session_id, strategy=_STRATEGIES.get(strategy, "heuristic"))
        return ExtractResult(r.status, r.strategy, None, r.fallback_reason, r.touched, r.memory_ids)

    def dream(self, session_id: str, *, now: datetime, strategy: str, force: bool = False) -> DreamResult:
        r = self.mem.dream(force=force, strategy="model" if strategy == "model" else "heuristic")
        return DreamResult(r.status, r.strategy, None, r.fallback_reason, (), r.counts["duplicates_removed"],
                           r.reason if r.status == "failed" else None)

    def recall(self, query: str, *, now: datetime, limit: int | None, excluded: Sequence[str],
               strategy: str) -> RecallResult:
        r = self.mem.recall(query, RECALL_LIMIT if limit is None else limit, _STRATEGIES.get(strategy, "heuristic"),
                            excluded=excluded)
        items = [c for c in r.items if c.source_type in ("semantic", "recent")]  # episodes are not records
        return RecallResult(tuple(c.memory_id for c in items), r.strategy if r.items else "none", r.fallback_reason,
                            tuple(c.score for c in items), r.prompt_text)

    def forget(self, query: str, *, now: datetime, strategy: str) -> ForgetResult:
        return ForgetResult(self.mem.forget(query).removed, "heuristic")

    def documents(self) -> list[MemoryRecord]:
        return [MemoryRecord(d.id, d.file_type, d.title, d.text, d.description, d.source_ref, None,
                             datetime.fromisoformat(d.created_at), datetime.fromisoformat(d.updated_at))
                for d in self.mem.documents()]

    def index_text(self) -> str:
        return self.mem.index_text()

    def system_check(self, name: str, expected: str | int | float | bool) -> str | None:  # noqa: FBT001
        """None when the named check holds, else what is wrong (one line)."""
        check = _CHECKS.get(name)
        if check is None:
            return f"unknown check (known: {', '.join(sorted(_CHECKS))})"
        return check(self, expected)

    def close(self) -> None:
        self.mem.close()


def _text_check(source: Callable[[SqliteSystem], str], label: str, *, present: bool) -> Callable[..., str | None]:
    def check(system: SqliteSystem, expected: object) -> str | None:
        text = source(system)
        if (str(expected) in text) == present:
            return None
        return f"{label} {'does not contain' if present else 'contains'} {expected!r} ({len(text)} chars: {text[:80]!r}…)"
    return check


def _fts_integrity(system: SqliteSystem, expected: object) -> str | None:
    problem = system.mem.fts_integrity()
    if (problem is None) == bool(expected):
        return None
    return f"FTS5 integrity-check: {problem}" if problem else "FTS5 integrity-check passed, expected it to fail"


def _within_caps(system: SqliteSystem, expected: object) -> str | None:
    """MEMORY.md per spec §5.5/§4.7: ≤ 1500 item characters, ≤ 5 items per section, injected ≤ 900 characters."""
    text, injected = system.mem.index_text(), system.mem.injected_index()
    items = [line for line in text.splitlines() if line.startswith("- ")]
    per_section = [len(s.split("\n- ")) - 1 for s in text.split("\n## ")[1:]]
    problems = [f"{sum(len(x) for x in items)} item chars > {MEMORY_MD_ITEM_CHARS}"] * \
        (sum(len(x) for x in items) > MEMORY_MD_ITEM_CHARS)
    problems += [f"a section has {max(per_section)} items > {MEMORY_MD_ITEMS_PER_TYPE}"] * \
        bool(per_section and max(per_section) > MEMORY_MD_ITEMS_PER_TYPE)
    problems += [f"injected {len(injected)} chars > {INJECTED_MAX_CHARS}"] * (len(injected) > INJECTED_MAX_CHARS)
    if (not problems) == bool(expected):
        return None
    return "; ".join(problems) or "MEMORY.md is within the spec's caps, expected it not to be"


def _count(source: Callable[[SqliteSystem], int], label: str) -> Callable[..., str | None]:
    def check(system: SqliteSystem, expected: object) -> str | None:
        n = source(system)
        return None if n == expected else f"{label}: {n}, expected {expected}"
    return check


def _no_episode_hits(system: SqliteSystem, expected: object) -> str | None:
    """Episodes recalled for the query alone (no recent messages appended to the enhanced query, spec §4.2)."""
    result = system.mem.recall(str(expected), RECALL_LIMIT, recent_messages=[])
    hits = [c for c in result.items if c.source_type == "episode"]
    return None if not hits else f"{len(hits)} episode(s) recalled for {expected!r}: {hits[0].content[:60]!r}"


def _trace_query(expected: object) -> tuple[str, str] | None:
    keyword, sep, want = str(expected).partition(" => ")
    return (keyword, want) if sep and keyword.strip() else None


def _traces(system: SqliteSystem, expected: object) -> str | None:
    """``traces: "KEYWORD => N"``: search_conversation_traces (spec §4.6 source 1) finds N turns for KEYWORD."""
    if (query := _trace_query(expected)) is None:
        return f"traces: expected 'KEYWORD => N', got {expected!r}"
    keyword, want = query
    n = len(system.mem.search_traces(keyword))
    return None if str(n) == want.strip() else f"trace search for {keyword!r}: {n} turn(s), expected {want.strip()}"


def _traces_newest(system: SqliteSystem, expected: object) -> str | None:
    """``traces_newest: "KEYWORD => TEXT"``: the newest turn trace search returns for KEYWORD contains TEXT."""
    if (query := _trace_query(expected)) is None:
        return f"traces_newest: expected 'KEYWORD => TEXT', got {expected!r}"
    keyword, want = query
    rows = system.mem.search_traces(keyword)
    if not rows:
        return f"trace search for {keyword!r} found nothing, expected a newest turn containing {want!r}"
    return None if want in str(rows[0]["content"]) else \
        f"the newest turn for {keyword!r} is {str(rows[0]['content'])[:80]!r}, expected it to contain {want!r}"


_CHECKS: Final[dict[str, Callable[[SqliteSystem, Any], str | None]]] = {
    "fts_integrity": _fts_integrity,
    "index_contains": _text_check(lambda s: s.mem.index_text(), "MEMORY.md", present=True),
    "index_lacks": _text_check(lambda s: s.mem.index_text(), "MEMORY.md", present=False),
    "injected_index_contains": _text_check(lambda s: s.mem.injected_index(), "the injected MEMORY.md", present=True),
    "injected_index_lacks": _text_check(lambda s: s.mem.injected_index(), "the injected MEMORY.md", present=False),
    "profile_contains": _text_check(lambda s: s.mem.user_profile_text(), "USER.md", present=True),
    "index_within_limits": _within_caps,
    "episodes": _count(lambda s: s.mem.episode_count(), "episodes"),
    "memories": _count(lambda s: len(s.mem.documents()), "memory rows"),
    "queue_open": _count(lambda s: s.mem.queue_count("pending") + s.mem.queue_count("processing"), "open queue rows"),
    "no_episode_hits": _no_episode_hits,
    "traces": _traces,
    "traces_newest": _traces_newest,
}


def factory_for(variant: str) -> Callable[[Path, Any, Any, Any], SqliteSystem]:
    """The factory for ``--system sqlite[:VARIANT]``: ``fixed`` (default), ``seed`` or a ``Quirks.parse`` string."""
    quirks = Quirks.parse(variant or "fixed")  # ValueError names the bad quirk

    def factory(workdir: Path, clock: Any, model: Any, events: Any) -> SqliteSystem:
        return SqliteSystem(workdir, clock, model, events, quirks)
    return factory

