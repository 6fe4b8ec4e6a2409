"""Mechanical dream dedupe (spec §6.7 variant B), pure: docs in, a plan of writes and deletes out.

fix: spec §12 — upstream's cross-file step rewrote the canonical doc with only one merged entry (dropping its
other entries) and could silently skip that write, losing the duplicate's why/how once it was unlinked. Here the
canonical doc receives every entry of both files, conflicting why/how texts are both kept, and the pass repeats
until no duplicate key is left, so the plan is idempotent and loses no entry text.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field

from memory_core.files.entries import Entry, parse_entries, render_entries
from memory_core.files.formats import locale_key
from memory_core.files.topic import MEMORY_TYPES, TopicDoc


@dataclass(frozen=True, slots=True)
class DedupePlan:
    """New bodies to write, files to delete, and how many entries were folded away."""

    bodies: dict[str, str] = field(default_factory=dict)
    """Relative path → new body, for docs whose body changed."""
    deletes: tuple[str, ...] = ()
    """Relative paths of duplicate docs merged into a canonical one."""
    deduped_entries: int = 0
    touched_topics: tuple[str, ...] = ()
    """Types of docs written or deleted, in canonical order."""


def _join(a: str | None, b: str | None) -> str | None:
    if not a or not b or b == a or b in a:
        return a or b
    if a in b:
        return b
    return f"{a} {b}"


def combine_entries(existing: Entry, later: Entry) -> Entry:
    """Merge two entries with the same summary key: later summary wins (parity); why/how texts are all kept."""
    return Entry(
        later.summary or existing.summary,
        _join(existing.why, later.why),
        _join(existing.how_to_apply, later.how_to_apply),
    )


@dataclass(slots=True)
class _Doc:
    """One doc during planning: its entries by lower-cased summary, sorted until it absorbs another doc, then with
    a lazy min-heap of their sort keys."""

    kind: str
    original: str
    entries: dict[str, Entry]
    ordered: list[Entry] | None
    """The entries sorted by ``locale_key`` of their summaries (spec §6.7 within-file) while the doc is untouched."""
    heap: list[tuple[tuple[str, str], str]] | None = None

    def first_key(self) -> str | None:
        """The lower-cased summary of the entry that sorts first (``locale_key`` order), or None if empty."""
        if self.ordered is not None:
            return self.ordered[0].summary.lower() if self.ordered else None
        heap, entries = self._heap(), self.entries
        while heap and entries[heap[0][1]].summary != heap[0][0][1]:
            heapq.heappop(heap)  # stale: that entry's summary changed when it was combined
        return heap[0][1] if heap else None

    def sorted_entries(self) -> list[Entry]:
        if self.ordered is None:
            self.ordered = sorted(self.entries.values(), key=lambda e: locale_key(e.summary))
        return self.ordered

    def _heap(self) -> list[tuple[tuple[str, str], str]]:
        if self.heap is None:
            self.heap = [(locale_key(e.summary), k) for k, e in self.entries.items()]
            heapq.heapify(self.heap)
        return self.heap

    def absorb(self, other: _Doc) -> int:
        """Fold ``other``'s entries in after this doc's (as ``_fold(mine + theirs)``); returns entries folded."""
        big, small = (other, self) if len(other.entries) > len(self.entries) else (self, other)
        into, heap = big.entries, big._heap()
        folded = 0
        for key, entry in small.entries.items():
            if key in into:  # combine_entries keeps (existing = this doc's, later = the other's) either way round
                into[key] = combine_entries(entry, into[key]) if big is other else combine_entries(into[key], entry)
                folded += 1
            else:
                into[key] = entry
            heapq.heappush(heap, (locale_key(into[key].summary), key))
        self.entries, self.heap, self.ordered = into, heap, None
        return folded


def _fold(entries: Sequence[Entry]) -> dict[str, Entry]:
    """Entries with equal lower-cased summaries folded into one (``combine_entries``, in order), by that key."""
    merged: dict[str, Entry] = {}
    for entry in entries:
        key = entry.summary.lower()
        merged[key] = combine_entries(merged[key], entry) if key in merged else entry
    return merged


def plan_dedupe(docs: Sequence[TopicDoc]) -> DedupePlan:
    """Within-file then cross-file dedupe over docs in scan order (most recent first is canonical).

    Cross-file, upstream's rule is applied pass by pass: walking docs in order, the first doc whose
    ``type:first-summary`` key an earlier doc already has is folded into that earlier doc, then the walk restarts
    (the earlier doc's first entry may have changed). Here the same sequence of folds is found directly: the next
    fold is always at the smallest position that is the second live position of some key, so positions are kept
    per key in heaps and the candidates in one more heap. O(n log n) in entries instead of a pass per fold.
    """
    state: dict[str, _Doc] = {}
    removed = 0
    for doc in docs:
        entries = parse_entries(doc.body)
        merged = _fold(entries)
        removed += len(entries) - len(merged)
        ordered = sorted(merged.values(), key=lambda e: locale_key(e.summary))
        state[doc.relative_path] = _Doc(doc.type, doc.body, merged, ordered)
    paths = list(state)
    docs_at = [state[p] for p in paths]
    live = [True] * len(paths)
    key_of: list[tuple[str, str] | None] = []
    groups: dict[tuple[str, str], list[int]] = {}
    for i, d in enumerate(docs_at):
        first = d.first_key()
        key_of.append(None if first is None else (d.kind, first))
        if first is not None:
            groups.setdefault((d.kind, first), []).append(i)  # ascending: already a heap

    def two_smallest(key: tuple[str, str]) -> tuple[int, int] | None:
        heap = groups.get(key, [])
        while heap and not (live[heap[0]] and key_of[heap[0]] == key):
            heapq.heappop(heap)
        if not heap:
            return None
        head = heapq.heappop(heap)
        while heap and not (live[heap[0]] and key_of[heap[0]] == key):
            heapq.heappop(heap)
        second = heap[0] if heap else None
        heapq.heappush(heap, head)
        return None if second is None else (head, second)

    pending = [(pair[1], key) for key in groups if (pair := two_smallest(key)) is not None]
    heapq.heapify(pending)
    deletes: list[str] = []
    while pending:
        at, key = heapq.heappop(pending)
        pair = two_smallest(key)
        if pair is None or pair[1] != at:
            continue  # stale candidate
        target, dup = pair
        removed += docs_at[target].absorb(docs_at[dup])
        live[dup] = False
        deletes.append(paths[dup])
        first = docs_at[target].first_key()
        new_key = (docs_at[target].kind, first) if first is not None else None
        if new_key != key and new_key is not None:
            key_of[target] = new_key
            heapq.heappush(groups.setdefault(new_key, []), target)
        for k in {key, new_key}:
            if k is not None and (pair := two_smallest(k)) is not None:
                heapq.heappush(pending, (pair[1], k))
    new_bodies: dict[str, str] = {}
    for i, path in enumerate(paths):
        if live[i]:
            rendered = render_entries(docs_at[i].sorted_entries())
            if rendered != docs_at[i].original:
                new_bodies[path] = rendered
    touched = {state[p].kind for p in [*new_bodies, *deletes]}
    return DedupePlan(
        new_bodies, tuple(deletes), removed, tuple(t for t in MEMORY_TYPES if t in touched)
    )
