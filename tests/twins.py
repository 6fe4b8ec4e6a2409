"""Deliberately broken memory systems: each breaks one property, so the fuzz tests can show it is caught.

Use them with ``memharness run --system tests.twins:<name>`` from the repository root.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from harness.system import DreamResult, ExtractResult, ForgetResult, RecallResult, ReferenceSystem


class Duplicating(ReferenceSystem):
    """Every extraction also writes a copy of each file it wrote."""

    def extract(self, session_id: str, *, now: datetime, strategy: str, queued_behind: bool = False) -> ExtractResult:
        res = super().extract(session_id, now=now, strategy=strategy, queued_behind=queued_behind)
        for key in res.written:
            self.store.write(key.replace(".md", "-copy.md"), self.store.read(key))
        return res


class LeakyForget(ReferenceSystem):
    """Forget reports success but deletes nothing."""

    def forget(self, query: str, *, now: datetime, strategy: str) -> ForgetResult:
        return ForgetResult(removed=(), strategy=strategy)


class Escaping(ReferenceSystem):
    """Extraction also writes ``../x`` next to the memory root."""

    def extract(self, session_id: str, *, now: datetime, strategy: str, queued_behind: bool = False) -> ExtractResult:
        (self.root.parent.parent / "x").write_text("escaped")
        return super().extract(session_id, now=now, strategy=strategy, queued_behind=queued_behind)


class OverLimit(ReferenceSystem):
    """Recall ignores k and the excluded list."""

    def recall(self, query: str, *, now: datetime, limit: int | None, excluded: Sequence[str],
               strategy: str) -> RecallResult:
        bound = limit or self.recall_limit
        res = super().recall(query, now=now, limit=bound + 5, excluded=(), strategy=strategy)
        return RecallResult(selected=tuple(d.id for d in self.documents())[: bound + 1], strategy=res.strategy)


class LossyDream(ReferenceSystem):
    """Dream deletes the oldest memory."""

    def dream(self, session_id: str, *, now: datetime, strategy: str, force: bool = False) -> DreamResult:
        docs = sorted(self.documents(), key=lambda d: d.id)
        if docs:
            self.store.delete(docs[-1].id)
        return super().dream(session_id, now=now, strategy=strategy, force=force)


class BloatedIndex(ReferenceSystem):
    """The index grows a 300-character line per memory."""

    def index_text(self) -> str:
        return "\n".join(f"- [{d.title}]({d.id}) — " + "x" * 300 for d in self.documents())


class OrderDependent(ReferenceSystem):
    """Recall returns only the first memory ever written."""

    def recall(self, query: str, *, now: datetime, limit: int | None, excluded: Sequence[str],
               strategy: str) -> RecallResult:
        first = sorted(self.documents(), key=lambda d: self.written_order.get(d.id, 1e9))[:1]
        return RecallResult(selected=tuple(d.id for d in first), strategy="heuristic")

    def extract(self, session_id: str, *, now: datetime, strategy: str, queued_behind: bool = False) -> ExtractResult:
        res = super().extract(session_id, now=now, strategy=strategy, queued_behind=queued_behind)
        for key in res.written:
            self.written_order.setdefault(key, len(self.written_order))
        return res

    @property
    def written_order(self) -> dict[str, int]:
        if not hasattr(self, "_order"):
            self._order: dict[str, int] = {}
        return self._order


class Forgetful(ReferenceSystem):
    """Recall never selects anything."""

    def recall(self, query: str, *, now: datetime, limit: int | None, excluded: Sequence[str],
               strategy: str) -> RecallResult:
        return RecallResult(selected=(), strategy="none")


def _factory(cls: type[ReferenceSystem]) -> Any:
    def make(workdir: Path, clock: Any, model: Any, events: Any) -> ReferenceSystem:
        return cls(workdir, clock, model, events)

    return make


duplicating = _factory(Duplicating)
leaky_forget = _factory(LeakyForget)
escaping = _factory(Escaping)
over_limit = _factory(OverLimit)
lossy_dream = _factory(LossyDream)
bloated_index = _factory(BloatedIndex)
order_dependent = _factory(OrderDependent)
forgetful = _factory(Forgetful)
