"""Mechanical dream dedupe (spec §6.7 variant B), pure: docs in, a plan of writes and deletes out.

fix: spec §12 — upstream's cross-file step rewrote the canonical doc with only one merged entry (dropping its
other entries) and could silently skip that write, losing the duplicate's why/how once it was unlinked. Here the
canonical doc receives every entry of both files, conflicting why/how texts are both kept, and the pass repeats
until no duplicate key is left, so the plan is idempotent and loses no entry text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from memory_core.entries import Entry, parse_entries, render_entries
from memory_core.formats import locale_key
from memory_core.topic import MEMORY_TYPES, TopicDoc


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


def dedupe_entries(entries: Sequence[Entry]) -> list[Entry]:
    """Fold entries with equal lower-cased summaries, then sort by summary (spec §6.7 within-file)."""
    merged: dict[str, Entry] = {}
    for entry in entries:
        key = entry.summary.lower()
        merged[key] = combine_entries(merged[key], entry) if key in merged else entry
    return sorted(merged.values(), key=lambda e: locale_key(e.summary))


def plan_dedupe(docs: Sequence[TopicDoc]) -> DedupePlan:
    """Within-file then cross-file dedupe over docs in scan order (most recent first is canonical)."""
    bodies: dict[str, list[Entry]] = {}
    originals: dict[str, str] = {}
    types: dict[str, str] = {}
    removed = 0
    for doc in docs:
        entries = parse_entries(doc.body)
        folded = dedupe_entries(entries)
        removed += len(entries) - len(folded)
        bodies[doc.relative_path], originals[doc.relative_path] = folded, doc.body
        types[doc.relative_path] = doc.type
    deletes: list[str] = []
    changed = True
    while changed:
        changed = False
        canonical: dict[str, str] = {}
        for path in [p for p in bodies if p not in deletes]:
            entries = bodies[path]
            if not entries:
                continue
            key = f"{types[path]}:{entries[0].summary.lower()}"
            if key not in canonical:
                canonical[key] = path
                continue
            target = canonical[key]
            combined = bodies[target] + entries
            bodies[target] = dedupe_entries(combined)
            removed += len(combined) - len(bodies[target])
            deletes.append(path)
            changed = True
            break  # keys of the target may have changed: start the pass again
    new_bodies = {
        p: render_entries(e) for p, e in bodies.items() if p not in deletes and render_entries(e) != originals[p]
    }
    touched = {types[p] for p in [*new_bodies, *deletes]}
    return DedupePlan(
        new_bodies, tuple(deletes), removed, tuple(t for t in MEMORY_TYPES if t in touched)
    )
