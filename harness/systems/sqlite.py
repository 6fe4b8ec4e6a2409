"""The SQLite + FTS5 memory (``memory_core.sqlite``, OpenAkita memory v2) as a system under test.

It plugs in through the public protocol only, as a third party's system would (``--system sqlite`` for the fixed
mode, ``--system sqlite:seed`` for the seed, bugs included, or any ``Quirks.parse`` string such as
``sqlite:fixed+q1_decay_priority_case``). Caps and limits come from the SQLite spec (s1-sqlite-memory-spec.md) and
are stated here, never read from the port's constants, so a changed constant in the port is caught.

Seed pass-through (``memories[i].system``; bounds: sqlite_seed.py): ``importance``, ``subject``, ``predicate``, ``priority``
(kept as written, so ``SHORT_TERM`` plants a Q24 row), ``duration`` (``permanent``/``7d``/``24h``/``session``, from the seeding
moment), ``expires_in`` (signed, e.g. ``-1h``), ``access_count`` (a whole number: the row's recall count, as if
recalled that often), ``id`` (re-seeding an id is an update in place), ``via: add_memory``
(the manual tool: priority TTL, §3.6), ``queue: processing|pending`` (plant an extraction-queue row, its
``last_attempted_at`` = the memory's mtime, instead of a memory).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final

from harness.errors import ScenarioInputError
from harness.scenario import SeedMemory, Turn
from harness.system import Capability, DreamResult, ExtractResult, ForgetResult, MemoryRecord, RecallResult
from harness.systems import SEED_FIELDS as SHIPPED_SEED_FIELDS
from harness.systems.sqlite_options import detail as _detail
from harness.systems.sqlite_options import memory_type as _memory_type
from harness.systems.sqlite_seed import check_seed_fields
from harness.systems.store_watch import StoreWatch, watched
from memory_core.sqlite import Quirks, SqliteMemory
from memory_core.sqlite.memory import PATHS as RECALL_PATHS

RECALL_LIMIT: Final = 20
"""Spec §4.2: ``retrieve_candidates(…, limit=20)``."""
MEMORY_MD_ITEM_CHARS: Final = 1500
"""Spec §5.5: rendered item characters (headers and newlines excluded) ≤ 1500."""
MEMORY_MD_ITEMS_PER_TYPE: Final = 5
INJECTED_MAX_CHARS: Final = 900
"""Spec §4.7: ``min(1500 // 2, 300) * 3`` characters injected."""
SEED_FIELDS: Final = SHIPPED_SEED_FIELDS["sqlite"]
_DELTA: Final = re.compile(r"(-?\d+(?:\.\d+)?)([smhd])", re.ASCII)
_UNITS: Final = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
_STRATEGIES: Final = {"heuristic": "heuristic", "model": "model", "bm25": "bm25"}


def _delta(value: object, field: str) -> timedelta:
    m = _DELTA.fullmatch(str(value))
    if m is None:
        raise ScenarioInputError(f"{field}: expected a signed duration like -1h, 30m or 3d, got {value!r}")
    return timedelta(**{_UNITS[m.group(2)]: float(m.group(1))})


@watched(reads=("add_turns", "index_text", "system_check"))  # its database vanished: store_watch.py
class SqliteSystem:
    """``SqliteMemory`` behind ``harness.system.MemorySystem`` (capabilities: dream, events, recall_options,
    recall_prompt, system_checks)."""

    name = "sqlite"
    design = "s1-sqlite"
    recall_limit = RECALL_LIMIT
    strategies = frozenset(_STRATEGIES)  # the others (embedding, hybrid, plugin rankers) are skipped, with the reason
    capabilities = frozenset({Capability.DREAM, Capability.RECALL_PROMPT, Capability.SYSTEM_CHECKS, Capability.EVENTS,
                              Capability.RECALL_OPTIONS, Capability.FORGET_OPTIONS})

    def __init__(self, workdir: Path, clock: Any, model: Any, events: Any, quirks: Quirks, variant: str = "") -> None:
        self.clock, self.variant = clock, variant  # variant: the quirk-set text it was built from ("": the run's own)
        ids = random.Random(0)  # ids drawn the same way in every replay: probes and reports are reproducible
        self.mem = SqliteMemory(workdir / "openakita.db", clock, model, quirks, events,
                                identity_dir=workdir / "identity", id_factory=lambda: f"{ids.getrandbits(128):032x}")
        self.watch = StoreWatch(workdir, "memory database", (workdir / "openakita.db",))

    def seed(self, memory: SeedMemory, *, mtime: datetime) -> None:
        extra = {k: v for k, v in memory.system.items() if k in SEED_FIELDS}  # another shipped system's: ignored
        unknown = sorted(set(memory.system) - set().union(*SHIPPED_SEED_FIELDS.values()))
        if unknown:
            raise ScenarioInputError(f"memory {memory.path}: unknown system field(s) {', '.join(unknown)} "
                             f"(known: {', '.join(sorted(SEED_FIELDS))})")
        body = "\n".join(x for x in (memory.description, memory.body) if x) or memory.name or memory.path
        check_seed_fields(memory.path, extra)
        score = extra.get("importance", 0.5)
        if "queue" in extra:
            try:
                self.mem.plant_queue_row(memory.path, body, status=str(extra["queue"]), last_attempted_at=mtime)
            except ValueError as exc:  # a status the queue has not: the scenario's, not a failure of the system
                raise ScenarioInputError(f"memory {memory.path}: system.queue: {exc}") from None
            return
        if extra.get("via") == "add_memory":
            self.mem.add_memory(body, memory.type, float(score))
            return
        if "via" in extra:
            raise ScenarioInputError(f"memory {memory.path}: system.via must be add_memory, got {extra['via']!r}")
        record: dict[str, Any] = {"content": body, "type": memory.type, "title": memory.name, "path": memory.path,
                                  "description": memory.description, "facts": list(memory.facts),
                                  "created_at": mtime, "updated_at": mtime, "id": extra.pop("id", memory.path)}
        if "expires_in" in extra:
            raw, field = extra.pop("expires_in"), f"memory {memory.path}: expires_in"
            try:  # an expiry no timestamp holds was the system's failure ("seed() raised OverflowError"), unlocated
                record["expires_at"] = self.clock.now() + _delta(raw, field)
            except OverflowError:
                raise ScenarioInputError(f"{field}: {raw!r} puts the expiry outside the years 1 to 9999") from None
        accessed = extra.pop("access_count", None)
        try:
            (row_id,) = self.mem.seed([{**record, **extra}])
        except ValueError as exc:  # the scenario's seed fields, refused by the store
            raise ScenarioInputError(f"ValueError: {exc}") from None
        row = self.mem.db.get_memory(row_id) if accessed is not None else None
        if row is not None:  # the store's own update, its timestamp kept (as recall's): recalled that often already
            self.mem.db.update_memory(row_id, {"access_count": accessed, "updated_at": row["updated_at"]})

    def finish_seeding(self, *, now: datetime) -> None:
        return None

    def add_turns(self, session_id: str, turns: Sequence[Turn], *, now: datetime) -> None:
        self.mem.add_turns(session_id, [{"role": t.kind, "content": t.text,
                                         "tool_calls": [c.as_dict() for c in t.tool_calls],
                                         "tool_results": [r.as_dict() for r in t.tool_results]} for t in turns])

    def extract(self, session_id: str, *, now: datetime, strategy: str, queued_behind: bool = False) -> ExtractResult:
        r = self.mem.extract(session_id, strategy=_STRATEGIES.get(strategy, "heuristic"))
        details = {"inserted": r.inserted, "merged": r.merged, "attempts": r.attempts, "episodes": len(r.episodes),
                   "expired_removed": r.expired_removed, "enqueued": r.enqueued, "note": r.note or ""}
        return ExtractResult(r.status, r.strategy, None, r.fallback_reason, r.touched, r.memory_ids, details=details)

    def dream(self, session_id: str, *, now: datetime, strategy: str, force: bool = False) -> DreamResult:
        r = self.mem.dream(force=force, strategy="model" if strategy == "model" else "heuristic")
        return DreamResult(r.status, r.strategy, None, r.fallback_reason, (), r.counts["duplicates_removed"],
                           r.reason if r.status == "failed" else None, details=dict(r.counts))

    def recall(self, query: str, *, now: datetime, limit: int | None, excluded: Sequence[str],
               strategy: str, options: Mapping[str, Any] | None = None) -> RecallResult:
        """``options`` (capability recall_options): ``path`` (candidates, typed or the tool's cascade, spec §8.1)
        and ``memory_type`` (the typed search's filter)."""
        opts = dict(options or {})
        if unknown := sorted(set(opts) - {"path", "memory_type"}):
            raise ScenarioInputError(f"unknown recall option(s) {', '.join(unknown)} (known: memory_type, path)")
        if opts.get("path", "candidates") not in RECALL_PATHS:  # a typo is the scenario's, not a failure of the system
            raise ScenarioInputError(f"recall option path: expected one of {', '.join(RECALL_PATHS)}, got {opts['path']!r:.60}")
        if "memory_type" in opts:
            opts["memory_type"] = _memory_type(opts["memory_type"], "recall")
        r = self.mem.recall(query, RECALL_LIMIT if limit is None else limit, _STRATEGIES.get(strategy, "heuristic"),
                            excluded=excluded, path=str(opts.get("path", "candidates")),
                            memory_type=str(opts["memory_type"]) if "memory_type" in opts else None)
        items = [c for c in r.items if c.source_type in ("semantic", "recent")]  # episodes are not records
        return RecallResult(tuple(c.memory_id for c in items), r.strategy if r.items else "none", r.fallback_reason,
                            tuple(c.score for c in items), r.prompt_text,
                            {"path": r.path, "intent": r.intent, "enhanced_query": _detail(r.enhanced_query),
                             "keywords": _detail(" ".join(r.keywords)), "episodes": len(r.items) - len(items)})

    def forget(self, query: str, *, now: datetime, strategy: str, options: Mapping[str, Any] | None = None
               ) -> ForgetResult:
        """``options`` (capability forget_options): ``max_delete`` and ``memory_type``, as the delete-by-query tool
        takes them (spec §8)."""
        opts = dict(options or {})
        unknown = sorted(set(opts) - {"max_delete", "memory_type"})
        if unknown:
            raise ScenarioInputError(f"unknown forget option(s) {', '.join(unknown)} (known: max_delete, memory_type)")
        if "max_delete" in opts and (type(opts["max_delete"]) is not int or opts["max_delete"] < 0):
            raise ScenarioInputError(f"forget option max_delete: expected a whole number >= 0, got {opts['max_delete']!r}")
        if "memory_type" in opts:
            opts["memory_type"] = _memory_type(opts["memory_type"], "forget")
        r = self.mem.forget(query, **opts)
        return ForgetResult(r.removed, "heuristic", details={"candidates": len(r.candidates)})

    def documents(self) -> list[MemoryRecord]:
        return [MemoryRecord(d.id, d.file_type, d.title, d.text, d.description, d.source_ref, None,
                             datetime.fromisoformat(d.created_at), datetime.fromisoformat(d.updated_at))
                for d in self.mem.documents()]

    def index_text(self) -> str:
        return self.mem.index_text()

    def system_check(self, name: str, expected: str | int | float | bool) -> str | None:  # noqa: FBT001
        """None when the named check holds, else what is wrong (one line)."""
        from harness.systems.sqlite_checks import CHECKS, expected_problem

        check = CHECKS.get(name)
        if check is None:  # the scenario's error, as a wrong value is: validate finds it too
            raise ScenarioInputError(f"check system.{name}: unknown check (known: {', '.join(sorted(CHECKS))})")
        if problem := expected_problem(name, expected):  # fts_integrity: 'yes' passed, as any non-empty text
            raise ScenarioInputError(f"check system.{name}: {problem}")
        return check[0](self, expected)

    def close(self) -> None:
        self.mem.close()


def factory_for(variant: str, *, named: bool = False) -> Callable[[Path, Any, Any, Any], SqliteSystem]:
    """The factory for ``--system sqlite[:VARIANT]``: ``fixed`` (default), ``seed`` or a ``Quirks.parse`` string.
    ``factory.for_variant(TEXT)`` builds a scenario's ``variant:`` (its systems declare ``variant = TEXT``)."""
    quirks = Quirks.parse(variant or "fixed")  # ValueError names the bad quirk

    def factory(workdir: Path, clock: Any, model: Any, events: Any) -> SqliteSystem:
        return SqliteSystem(workdir, clock, model, events, quirks, variant if named else "")
    factory.for_variant = lambda text: factory_for(text, named=True)  # type: ignore[attr-defined]
    return factory

