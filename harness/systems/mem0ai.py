"""mem0 (PyPI ``mem0ai``, open-source mode) as a system under test: ``memharness run --system mem0``.

Optional: ``pip install -e '.[mem0]'``. mem0 talks to its models with its own OpenAI client, so the factory says
``model_proxy = True`` and both its LLM (provider ``openai``) and its embedder (OpenAI-compatible) point at the
harness's model proxy (``MEMHARNESS_MODEL_BASE_URL``): replayed from ``proxy.jsonl`` in the run's cassette set,
recorded with ``--record --api-base URL`` (docs/mem0.md). Everything else is local and per scenario, inside the
scenario's workdir: the vector store (Qdrant's local path mode, which ``mem0ai`` already depends on) and mem0's
SQLite history. mem0's telemetry and its remote notice config are off (``MEM0_TELEMETRY=False`` before mem0 is
imported); its home directory (``MEM0_DIR``, an anonymous id file) is a temporary directory of this process.

The mapping onto the protocol, one user (``USER_ID``):

- ``seed`` → ``Memory.add(text, infer=False)``: the memory stored verbatim (one embedding call), as mem0 stores
  what it is handed without its LLM;
- ``add_turns`` + ``extract`` → ``Memory.add(the session's new user/assistant turns)``: mem0's own pipeline (one LLM
  extraction call, embeddings of what it extracted);
- ``recall`` → ``Memory.search(query, top_k=limit)`` (mem0's default threshold), best first;
- ``forget`` → the delete-by-search the mem0 docs show: ``Memory.search(query, top_k=1)``, then
  ``Memory.delete`` of that memory (mem0 has no forget-by-query of its own; one match, so nothing unrelated goes);
- ``documents`` → ``Memory.get_all``.

It declares no capability: mem0 has no dream/consolidation step, no index or files, no locks, no events of the spec,
no injected prompt block, no recall/forget switches; the steps needing them are skipped with the reason. It declares
strategy ``heuristic`` only (mem0's one pipeline, under the name a portable scenario runs by default): the harness's
``model`` strategy means side-queries through the harness's own model (cassettes, scripted replies), which mem0
never calls, and the ranked strategies are the harness's rankers, not mem0's search.

Record ids are stable, never mem0's random UUIDs: a seeded memory is its path, an extracted one ``mem0/N`` in the
order mem0 added them. mem0 writes today's date into its extraction prompt; the adapter puts the scenario clock's
date there instead, so a request is the same in every replay.
"""

from __future__ import annotations

import atexit
import contextvars
import logging
import os
import shutil
import tempfile
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from harness.errors import HarnessError
from harness.replay import PROXY_URL_ENV
from harness.scenario import SeedMemory, Turn
from harness.system import DreamResult, ExtractResult, ForgetResult, MemoryRecord, RecallResult

INSTALL_HINT: Final = "pip install -e '.[mem0]'"
USER_ID: Final = "memharness"
RECALL_LIMIT: Final = 20
"""``Memory.search``'s own default ``top_k``."""
LLM_MODEL: Final = os.environ.get("MEMHARNESS_MEM0_LLM", "qwen2.5-coder-1.5b-instruct")
"""The chat model name mem0 sends (part of every recorded request's key): the recording's model."""
EMBEDDING_MODEL: Final = os.environ.get("MEMHARNESS_MEM0_EMBEDDER", "all-MiniLM-L6-v2")
EMBEDDING_DIMS: Final = 384
MAX_TOKENS: Final = 1000
_TODAY: contextvars.ContextVar[str | None] = contextvars.ContextVar("memharness_mem0_today", default=None)


def _prepare_mem0() -> Any:
    """Import mem0 with telemetry off and its home in a temporary directory; pin its prompt date to the scenario's."""
    os.environ["MEM0_TELEMETRY"] = "False"  # read once, at import: no PostHog client, no remote notice config
    if "MEM0_DIR" not in os.environ:
        home = tempfile.mkdtemp(prefix="memharness-mem0-")
        atexit.register(shutil.rmtree, home, ignore_errors=True)
        os.environ["MEM0_DIR"] = home
    log = logging.getLogger("mem0")  # mem0 logs a warning per missing optional part (spaCy, fastembed): not ours
    log.addHandler(logging.NullHandler())
    log.propagate = False
    try:
        import mem0.memory.main as main
        from mem0 import Memory
        from mem0.memory import telemetry
    except ImportError as exc:
        raise HarnessError(f"the mem0 system needs the mem0 extra: {INSTALL_HINT} ({exc})") from None

    if telemetry.MEM0_TELEMETRY:  # imported earlier in this process with telemetry on: refuse to phone home
        raise HarnessError("mem0 was imported with telemetry on; set MEM0_TELEMETRY=False before importing it")
    extraction_prompt = main.generate_additive_extraction_prompt
    if not getattr(extraction_prompt, "memharness_dated", False):
        def dated(*args: Any, current_date: str | None = None, **kwargs: Any) -> Any:
            return extraction_prompt(*args, current_date=current_date or _TODAY.get(), **kwargs)
        dated.memharness_dated = True  # type: ignore[attr-defined]
        main.generate_additive_extraction_prompt = dated
    return Memory


Memory = _prepare_mem0()


def mem0_config(workdir: Path, base_url: str) -> dict[str, Any]:
    """mem0's configuration: models behind ``base_url`` (the proxy), vector store and history in ``workdir``."""
    return {
        "llm": {"provider": "openai", "config": {"model": LLM_MODEL, "openai_base_url": base_url,
                                                 "api_key": "memharness-proxy", "temperature": 0.0,
                                                 "max_tokens": MAX_TOKENS}},
        "embedder": {"provider": "openai", "config": {"model": EMBEDDING_MODEL, "openai_base_url": base_url,
                                                      "api_key": "memharness-proxy", "embedding_dims": EMBEDDING_DIMS}},
        "vector_store": {"provider": "qdrant", "config": {"collection_name": "memharness", "path": str(workdir / "qdrant"),
                                                          "embedding_model_dims": EMBEDDING_DIMS, "on_disk": True}},
        "history_db_path": str(workdir / "history.db"),
    }


class Mem0System:
    """``mem0.Memory`` behind ``harness.system.MemorySystem`` (no capabilities; strategy ``heuristic``)."""

    name = "mem0"
    recall_limit = RECALL_LIMIT
    strategies = frozenset({"heuristic"})
    capabilities: frozenset[Any] = frozenset()

    def __init__(self, workdir: Path, clock: Any, base_url: str) -> None:
        self.clock = clock
        self.memory = Memory.from_config(mem0_config(workdir, base_url))
        self.ids: dict[str, str] = {}
        """mem0's id → ours (a seeded memory's path, ``mem0/N`` for what mem0 extracted)."""
        self.types: dict[str, str] = {}
        self.pending: dict[str, list[Turn]] = {}
        self.extracted = 0

    def _dated(self) -> contextvars.Token[str | None]:
        return _TODAY.set(self.clock.now().date().isoformat())

    def seed(self, memory: SeedMemory, *, mtime: datetime) -> None:
        text = "\n".join(x for x in (memory.description, memory.body) if x) or memory.name or memory.path
        token = self._dated()
        try:
            result = self.memory.add([{"role": "user", "content": text}], user_id=USER_ID, infer=False,
                                     metadata={"memharness_id": memory.path})
        finally:
            _TODAY.reset(token)
        for item in result["results"]:
            self.ids[item["id"]] = memory.path
            self.types[memory.path] = memory.type

    def finish_seeding(self, *, now: datetime) -> None:
        return None

    def add_turns(self, session_id: str, turns: Sequence[Turn], *, now: datetime) -> None:
        self.pending.setdefault(session_id, []).extend(turns)

    def extract(self, session_id: str, *, now: datetime, strategy: str, queued_behind: bool = False) -> ExtractResult:
        turns, self.pending[session_id] = self.pending.get(session_id, []), []
        messages = [{"role": t.kind, "content": t.text} for t in turns if t.kind in ("user", "assistant") and t.text]
        if not messages:
            return ExtractResult("completed", "heuristic", details={"added": 0})
        token = self._dated()
        try:
            result = self.memory.add(messages, user_id=USER_ID)
        finally:
            _TODAY.reset(token)
        written = []
        for item in result["results"]:
            if item.get("event") == "ADD" and item["id"] not in self.ids:
                self.extracted += 1
                self.ids[item["id"]] = f"mem0/{self.extracted}"
                written.append(self.ids[item["id"]])
        return ExtractResult("completed", "heuristic", written=tuple(written), details={"added": len(written)})

    def dream(self, session_id: str, *, now: datetime, strategy: str, force: bool = False) -> DreamResult:
        raise HarnessError("mem0 has no consolidation step (capability dream is not declared)")

    def _search(self, query: str, top_k: int) -> list[dict[str, Any]]:
        if not query.strip():
            return []
        return list(self.memory.search(query, top_k=top_k, filters={"user_id": USER_ID})["results"])

    def recall(self, query: str, *, now: datetime, limit: int | None, excluded: Sequence[str],
               strategy: str) -> RecallResult:
        limit = RECALL_LIMIT if limit is None else limit
        if limit <= 0:
            return RecallResult((), "none")
        hits = [h for h in self._search(query, limit + len(excluded)) if self._ours(h["id"]) not in excluded][:limit]
        return RecallResult(tuple(self._ours(h["id"]) for h in hits), "heuristic" if hits else "none", None,
                            tuple(float(h.get("score") or 0.0) for h in hits),
                            details={"memories": " | ".join(" ".join(str(h.get("memory", "")).split()) for h in hits)[:2000]})

    def forget(self, query: str, *, now: datetime, strategy: str) -> ForgetResult:
        hits = self._search(query, 1)
        for h in hits:
            self.memory.delete(h["id"])
        return ForgetResult(tuple(self._ours(h["id"]) for h in hits), "heuristic",
                            details={"deleted": len(hits)})

    def documents(self) -> list[MemoryRecord]:
        found = self.memory.get_all(filters={"user_id": USER_ID}, top_k=10_000)["results"]
        records = [MemoryRecord(self._ours(m["id"]), self.types.get(self._ours(m["id"]), ""), "",
                                str(m.get("memory", "")), source=f"mem0:{m['id']}") for m in found]
        return sorted(records, key=lambda r: r.id)

    def _ours(self, mem0_id: str) -> str:
        return self.ids.get(mem0_id, f"mem0:{mem0_id}")

    def close(self) -> None:
        self.memory.close()


def factory(workdir: Path, clock: Any, model: Any, events: Any) -> Mem0System:
    """One mem0 per scenario, in ``workdir``, its models behind the run's model proxy."""
    base_url = os.environ.get(PROXY_URL_ENV)
    if not base_url:
        raise HarnessError(f"the mem0 system runs behind the model proxy, but {PROXY_URL_ENV} is not set "
                           "(run it with memharness run --system mem0)")
    return Mem0System(workdir, clock, base_url)


factory.model_proxy = True  # type: ignore[attr-defined]
factory.strategies = Mem0System.strategies  # type: ignore[attr-defined]  # read before any instance: no model named
