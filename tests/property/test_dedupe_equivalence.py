"""plan_dedupe (heap-driven, n log n) plans exactly what upstream's restart-per-fold loop plans."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from memory_core.files.dedupe import DedupePlan, combine_entries, plan_dedupe
from memory_core.files.entries import Entry, parse_entries, render_entries
from memory_core.files.formats import locale_key
from memory_core.files.topic import MEMORY_TYPES, TopicDoc


def dedupe_entries(entries: Sequence[Entry]) -> list[Entry]:
    """Upstream's within-file fold, kept as the oracle: entries with equal lower-cased summaries combined in order,
    then sorted by summary (spec §6.7)."""
    merged: dict[str, Entry] = {}
    for entry in entries:
        key = entry.summary.lower()
        merged[key] = combine_entries(merged[key], entry) if key in merged else entry
    return sorted(merged.values(), key=lambda e: locale_key(e.summary))


def reference_plan(docs: Sequence[TopicDoc]) -> DedupePlan:
    """The previous implementation, kept verbatim as the oracle."""
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
            break
    new_bodies = {
        p: render_entries(e) for p, e in bodies.items() if p not in deletes and render_entries(e) != originals[p]
    }
    touched = {types[p] for p in [*new_bodies, *deletes]}
    return DedupePlan(new_bodies, tuple(deletes), removed, tuple(t for t in MEMORY_TYPES if t in touched))


SUMMARIES = st.sampled_from(["a", "A", "b", "B", "c", "ß", "ss", "SS", "x y", "X Y", "é", "É", "z"])
ENTRIES = st.builds(Entry, SUMMARIES, st.sampled_from([None, "w1", "w2", "w1 w2"]), st.sampled_from([None, "h1", "h2"]))
DOCS = st.lists(
    st.tuples(st.sampled_from(MEMORY_TYPES[:2]), st.lists(ENTRIES, max_size=5), st.sampled_from(["", "raw"]),
              st.integers(0, 12)),
    max_size=12,
)


def _docs(spec: list[tuple[str, list[Entry], str, int]]) -> list[TopicDoc]:
    out = []
    for i, (kind, entries, raw, path) in enumerate(spec):
        body = render_entries(entries) if not raw else "\n".join(e.summary for e in entries)
        out.append(TopicDoc(kind, f"{kind}/p{path if i % 3 == 0 else i}.md", "t", "", body))  # type: ignore[arg-type]
    return out


@given(DOCS)
def test_same_plan_as_the_restart_loop(spec: list[tuple[str, list[Entry], str, int]]) -> None:
    docs = _docs(spec)
    assert plan_dedupe(docs) == reference_plan(docs)


def test_long_chain_of_duplicates() -> None:
    docs = [TopicDoc("user", f"u{i}.md", "t", "", render_entries([Entry(f"k{i % 7}"), Entry(f"e{i}")]))
            for i in range(300)]
    assert plan_dedupe(docs) == reference_plan(docs)
