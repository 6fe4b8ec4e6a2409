"""Hypothesis properties of the memory core (round-trips, caps, invariants)."""

from __future__ import annotations

import string
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from memory_core.clock import FixedClock
from memory_core.files.age import memory_age_days
from memory_core.files.dedupe import plan_dedupe
from memory_core.files.entries import Entry, parse_entries, render_entries
from memory_core.files.forget import delete_matches, forget_candidates
from memory_core.files.formats import js_len
from memory_core.files.index import (
    MAX_INDEX_CHARS,
    MAX_INDEX_LINE_CHARS,
    MAX_INDEX_LINES,
    build_index,
    index_stats,
    truncate_index_for_prompt,
)
from memory_core.files.recall import select_heuristic
from memory_core.files.scan import scan
from memory_core.files.store import FileStore, InMemoryStore
from memory_core.files.topic import MEMORY_TYPES, TopicDoc, parse_topic, render_topic

T0 = datetime(2026, 4, 1, tzinfo=UTC)
words = st.text(alphabet=string.ascii_letters + string.digits + "éü中😀-_.,!'\"", min_size=1, max_size=12)
phrase = st.lists(words, min_size=1, max_size=8).map(" ".join)


@st.composite
def entries(draw: st.DrawFn) -> Entry:
    """Entries that obey spec §2: a summary that reads as a plain line, optional why/how."""
    summary = draw(st.sampled_from("abcdefgKLMNOPz")) + draw(phrase)
    why = draw(st.none() | phrase)
    how = draw(st.none() | phrase)
    return Entry(" ".join(summary.split()), why and " ".join(why.split()), how and " ".join(how.split()))


kinds = st.sampled_from(MEMORY_TYPES)


@st.composite
def docs(draw: st.DrawFn, *, max_size: int = 30, with_entries: bool = True) -> list[TopicDoc]:
    n = draw(st.integers(0, max_size))
    out = []
    for i in range(n):
        body = render_entries(draw(st.lists(entries(), max_size=4))) if with_entries else draw(st.text(max_size=20))
        out.append(TopicDoc(draw(kinds), f"{draw(kinds)}/d{i}.md", draw(phrase), draw(st.text(max_size=300)), body,
                            float(draw(st.integers(0, 10**6)))))
    return out


@given(st.lists(entries(), max_size=6))
def test_entries_round_trip(items: list[Entry]) -> None:
    assert parse_entries(render_entries(items)) == items


@given(st.text(max_size=400))
def test_parse_render_parse_is_stable_for_any_text(text: str) -> None:
    once = parse_entries(text)
    assume(all(e.summary and not e.summary.lower().lstrip("*").startswith(("why", "how")) for e in once))
    assume(all(e.summary[0] not in "-*#_" for e in once))
    assert parse_entries(render_entries(once)) == once


@given(phrase, st.text(max_size=200), kinds, st.lists(entries(), max_size=4))
def test_topic_file_round_trip(name: str, description: str, kind: str, items: list[Entry]) -> None:
    text = render_topic(name=name, description=description, kind=kind, body=render_entries(items))  # type: ignore[arg-type]
    doc = parse_topic(text, relative_path=f"{kind}/x.md")
    assert doc is not None
    assert doc.title == " ".join(name.split())
    assert doc.description == " ".join(description.split())
    assert doc.type == kind
    assert parse_entries(doc.body) == items


@settings(suppress_health_check=[HealthCheck.data_too_large, HealthCheck.too_slow])  # big on purpose: > 200 lines
@given(docs(max_size=260, with_entries=False))
def test_index_caps_hold_for_any_docs(items: list[TopicDoc]) -> None:
    built = build_index(items)
    stats = index_stats(built.text)
    assert stats["within"] is True
    content = built.text.split("\n\n> WARNING")[0]
    assert content.count("\n") < MAX_INDEX_LINES
    assert js_len(content) <= MAX_INDEX_CHARS
    assert all(js_len(line) <= MAX_INDEX_LINE_CHARS for line in content.split("\n"))


@given(st.lists(st.text(max_size=300), max_size=300))
def test_load_truncation_caps(lines: list[str]) -> None:
    out = truncate_index_for_prompt("\n".join(lines))
    kept = out.split("\n\n> WARNING: MEMORY.md is ")[0]
    assert kept.count("\n") < MAX_INDEX_LINES
    assert js_len(kept) <= MAX_INDEX_CHARS


@given(st.lists(st.tuples(st.text(alphabet="abcxyz/.", min_size=1, max_size=8), st.binary(max_size=200)), max_size=8))
def test_scan_never_raises_on_arbitrary_bytes(files: list[tuple[str, bytes]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "memory"
        root.mkdir()
        for name, data in files:
            target = root / (name.strip("/.") or "f").replace("..", "x")
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                (target.with_suffix(".md")).write_bytes(data)
            except OSError:
                continue
        result = scan(FileStore(root, FixedClock(T0)))
        assert len(result.docs) + len(result.dropped) <= len(files)


@given(docs(), st.text(max_size=60), st.integers(0, 8))
def test_heuristic_recall_bounded_and_deterministic(items: list[TopicDoc], query: str, limit: int) -> None:
    first = select_heuristic(query, items, limit=limit)
    assert len(first) <= limit
    assert first == select_heuristic(query, items, limit=limit)
    assert len({d.relative_path for d in first}) == len(first)


@given(st.lists(st.lists(entries(), min_size=1, max_size=4), min_size=1, max_size=5), st.data())
def test_forget_removes_only_matched_entries(bodies: list[list[Entry]], data: st.DataObject) -> None:
    store = InMemoryStore(FixedClock(T0))
    for i, body in enumerate(bodies):
        store.write(f"user/f{i}.md", render_topic(name=f"f{i}", description="", kind="user", body=render_entries(body)))
    cands = forget_candidates(scan(store).docs)
    chosen = data.draw(st.lists(st.sampled_from(cands), max_size=3, unique_by=lambda c: c.id))
    before = [(c.relative_path, c.summary.lower()) for c in cands]
    delete_matches(store, chosen, now=T0)
    gone = {(c.relative_path, c.summary.lower()) for c in chosen}
    after = [(c.relative_path, c.summary.lower()) for c in forget_candidates(scan(store).docs)]
    assert sorted(after) == sorted(p for p in before if p not in gone)


@given(docs(max_size=12))
def test_dedupe_idempotent_and_loses_no_text(items: list[TopicDoc]) -> None:
    plan = plan_dedupe(items)
    bodies = {d.relative_path: plan.bodies.get(d.relative_path, d.body) for d in items if d.relative_path not in
              plan.deletes}
    after = [TopicDoc(d.type, d.relative_path, d.title, d.description, bodies[d.relative_path], d.mtime_ms)
             for d in items if d.relative_path in bodies]
    second = plan_dedupe(after)
    assert second.bodies == {}
    assert second.deletes == ()
    assert second.deduped_entries == 0
    kept = " ".join(e.search_text() for d in after for e in parse_entries(d.body))
    for d in items:
        for e in parse_entries(d.body):
            for part in (e.summary, e.why, e.how_to_apply):
                if part:
                    assert part.lower() in kept


@given(st.floats(0, 2e12), st.lists(st.integers(0, 10**9), min_size=2, max_size=6))
def test_age_never_decreases_as_time_moves(mtime_ms: float, steps: list[int]) -> None:
    now = T0
    ages = []
    for step in steps:
        now = now + timedelta(milliseconds=step)
        ages.append(memory_age_days(mtime_ms, now=now))
    assert ages == sorted(ages)
    assert min(ages) >= 0
