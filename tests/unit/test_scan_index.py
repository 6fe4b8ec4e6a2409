from __future__ import annotations

from pathlib import Path

from memory_core.clock import FixedClock
from memory_core.files.index import (
    WRITE_WARNING,
    build_index,
    index_line,
    index_stats,
    rebuild_index,
    truncate_index_for_prompt,
)
from memory_core.files.scan import DocCache, scan
from memory_core.files.store import FileStore, InMemoryStore, Store
from memory_core.files.topic import TopicDoc
from tests.helpers import put_doc, raw_doc


def doc(path: str, *, title: str = "T", description: str = "", kind: str = "user") -> TopicDoc:
    return TopicDoc(kind, path, title, description, "b")  # type: ignore[arg-type]


def test_scan_finds_nested_docs_with_forward_slashes(store: Store) -> None:
    put_doc(store, "reference/grafana.md", "reference", "grafana.internal/d/api", name="Grafana", description="dash")
    result = scan(store)
    assert [d.relative_path for d in result.docs] == ["reference/grafana.md"]
    assert result.docs[0].description == "dash"
    assert result.docs[0].filename == "grafana.md"


def test_scan_orders_by_mtime_desc_then_filename(store: Store) -> None:
    put_doc(store, "user/b.md", "user", "x", mtime_ms=1000)
    put_doc(store, "user/a.md", "user", "x", mtime_ms=1000)
    put_doc(store, "user/new.md", "user", "x", mtime_ms=5000)
    put_doc(store, "user/C.md", "user", "x", mtime_ms=1000)
    assert [d.relative_path for d in scan(store).docs] == ["user/new.md", "user/a.md", "user/b.md", "user/C.md"]


def test_scan_skips_index_at_any_depth_and_non_docs(store: Store) -> None:
    put_doc(store, "user/a.md", "user", "x")
    raw_doc(store, "MEMORY.md", "- [a](user/a.md) — x")
    raw_doc(store, "sub/MEMORY.md", "---\ntype: user\n---\nx")
    raw_doc(store, "notes.txt", "---\ntype: user\n---\nx")
    raw_doc(store, "plain.md", "hello")
    result = scan(store)
    assert [d.relative_path for d in result.docs] == ["user/a.md"]
    assert [(d.relative_path, d.reason) for d in result.dropped] == [("plain.md", "not a memory doc")]


def test_scan_caps_at_200_most_recent(store: Store) -> None:
    for i in range(205):
        put_doc(store, f"project/p{i:03d}.md", "project", "x", mtime_ms=float(i))
    result = scan(store)
    assert len(result.docs) == 200
    assert result.total_docs == 205
    assert result.docs[0].relative_path == "project/p204.md"
    assert "project/p004.md" not in {d.relative_path for d in result.docs}


def test_broken_file_is_dropped_not_fatal(tmp_path: Path, clock: FixedClock) -> None:
    # fix: spec §12 — upstream's scan rejects entirely when one file cannot be read
    fs = FileStore(tmp_path / "memory", clock)
    put_doc(fs, "user/ok.md", "user", "fine")
    (tmp_path / "memory" / "user" / "bad.md").write_bytes(b"---\ntype: user\n---\n\xff\xfe")
    (tmp_path / "memory" / "dir.md").mkdir()
    result = scan(fs)
    assert [d.relative_path for d in result.docs] == ["user/ok.md"]
    assert [d.relative_path for d in result.dropped] == ["user/bad.md"]
    assert result.dropped[0].reason.startswith("unreadable: UnicodeDecodeError")


def test_scan_cache_reuses_unchanged_docs(clock: FixedClock) -> None:
    store = InMemoryStore(clock)
    put_doc(store, "user/a.md", "user", "x")
    put_doc(store, "user/b.md", "user", "y")
    cache = DocCache()
    scan(store, cache=cache)
    scan(store, cache=cache)
    assert (cache.misses, cache.hits) == (2, 2)
    put_doc(store, "user/a.md", "user", "changed body")
    assert scan(store, cache=cache).docs[0].body == "changed body"
    assert cache.misses == 3


def test_index_single_line_exact() -> None:
    built = build_index([doc("user/terse.md", title="User Memory", description="User profile")])
    assert built.text == "- [User Memory](user/terse.md) \u2014 User profile"
    assert not built.truncated
    assert build_index([]).text == ""


def test_index_line_falls_back_to_type_and_caps_at_150() -> None:
    assert index_line(doc("u.md")) == "- [T](u.md) \u2014 user"
    long = index_line(doc("u.md", description="word " * 60))
    assert len(long) <= 150
    assert long.endswith("\u2026")
    assert not long[:-1].endswith(" ")


def test_index_line_cap_counts_utf16_units() -> None:
    line = index_line(doc("u.md", description="😀" * 100))
    assert len(line.encode("utf-16-le")) // 2 <= 150


def test_index_200_line_cap_with_write_warning() -> None:
    built = build_index([doc(f"u{i}.md") for i in range(250)])
    assert built.truncated
    assert built.text.endswith(WRITE_WARNING)
    assert built.text.removesuffix(WRITE_WARNING).count("\n") == 199
    assert index_stats(built.text)["within"] is True


def test_index_25000_char_cap_cuts_at_a_newline() -> None:
    docs = [doc(f"p{i}.md", description="x" * 130) for i in range(199)]
    built = build_index(docs)
    content = built.text.removesuffix(WRITE_WARNING)
    assert built.truncated
    assert len(content) <= 25_000
    assert content.endswith("x") or content.endswith("\u2026")
    assert index_stats(built.text) == {**index_stats(built.text), "within": True}


def test_rebuild_index_writes_memory_md(store: Store) -> None:
    put_doc(store, "project/repo-workspaces.md", "project", "x", name="Project Memory", description="workspaces")
    rebuild_index(store)
    assert "[Project Memory](project/repo-workspaces.md)" in store.read("MEMORY.md")
    assert "workspaces" in store.read("MEMORY.md")


def test_load_truncation_lines_exact_warning() -> None:
    text = "\n".join(f"- line {i}" for i in range(250))
    out = truncate_index_for_prompt(text)
    assert "WARNING: MEMORY.md is 250 lines (limit: 200). Only part of it was loaded." in out
    assert out.count("\n") < 400
    assert out.endswith("Keep index entries to one line under ~200 chars; move detail into topic files.")


def test_load_truncation_bytes_uses_round_half_up() -> None:
    # 25,856 units = 25.25 KB exactly: JS toFixed(1) gives 25.3, Python's format() would give 25.2
    text = "\n".join(["y" * 199] * 129) + "\n" + "y" * (25_856 - 200 * 129)
    assert len(text) == 25_856
    out = truncate_index_for_prompt(text)
    assert format(25_856 / 1024, ".1f") == "25.2"
    assert "MEMORY.md is 25.3 KB (limit: 24.4 KB) \u2014 index entries are too long. Only part of it was loaded." in out
    assert len(out.split("\n\n> WARNING")[0]) <= 25_000


def test_load_truncation_both_caps() -> None:
    out = truncate_index_for_prompt("\n".join(["c" * 124] * 201))  # 25,124 units and 201 lines
    assert "MEMORY.md is 201 lines and 24.5 KB. Only part of it was loaded." in out


def test_load_truncation_leaves_small_index_alone() -> None:
    assert truncate_index_for_prompt("  - a\n- b \n") == "- a\n- b"


def test_rewrite_at_the_same_fake_instant_is_not_served_stale(store: Store) -> None:
    # under a fake clock both writes share one instant and one size; the store steps the mtime so the
    # (path, mtime, size) cache sees the change
    cache = DocCache()
    put_doc(store, "user/a.md", "user", "aaaa")
    assert scan(store, cache=cache).docs[0].body == "aaaa"
    put_doc(store, "user/a.md", "user", "bbbb")
    assert scan(store, cache=cache).docs[0].body == "bbbb"
