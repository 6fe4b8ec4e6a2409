"""The recall cache (``RecallCache``: scan signature, derived data, query index) changes nothing but the cost."""

from __future__ import annotations

import importlib
import os
import random
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_core.clock import FixedClock
from memory_core.files.formats import to_ms
from memory_core.files.recall import TYPE_KEYWORDS, recall, select_heuristic, tokenize
from memory_core.files.recall_index import HeuristicIndex
from memory_core.files.scan import DocCache, scan
from memory_core.files.snapshot import RecallCache, cached_scan, derive
from memory_core.files.store import FileStore, Store
from memory_core.files.topic import MEMORY_TYPES, TopicDoc, render_topic
from memory_core.model import ScriptedModel
from tests.conftest import T0

recall_mod = importlib.import_module("memory_core.files.recall")  # the package re-exports the function

# words that are substrings of each other, type keywords, and characters whose lower case is ASCII (Kelvin sign)
WORDS = ["release", "released", "lease", "ref", "reference", "preferences", "dashboard", "rule", "go", "the",
         "\u212aelvin", "kelvin", "caf\u00e9", "caf", "x1", "a1b2", "terse", "\u0130stanbul", "stanbul", "zz-top"]
TEXT = st.lists(st.sampled_from([*WORDS, " ", "\n", ", ", "-"]), max_size=14).map(" ".join)
QUERY = st.lists(st.sampled_from([*WORDS, "kel", "elv", "nul", "ase", "dash", "top", "zz"]), max_size=5).map(" ".join)


@st.composite
def doc_lists(draw: st.DrawFn) -> list[TopicDoc]:
    n = draw(st.integers(0, 12))
    docs = []
    for i in range(n):
        body = draw(st.one_of(TEXT, st.just(""), st.just("_No entries yet._")))
        docs.append(TopicDoc(draw(st.sampled_from(MEMORY_TYPES)), f"d{i}.md", draw(TEXT), draw(TEXT), body))
    return docs


@given(doc_lists(), QUERY, st.integers(0, 7), st.sets(st.integers(0, 12), max_size=4))
def test_index_selects_exactly_like_select_heuristic(docs: list[TopicDoc], query: str, limit: int,
                                                      excluded_at: set[int]) -> None:
    excluded = {f"d{i}.md" for i in excluded_at}
    index = HeuristicIndex.build(docs, derive)
    got = index.select(tokenize(query), keywords=TYPE_KEYWORDS, excluded=excluded, limit=limit)
    assert got == select_heuristic(query, [d for d in docs if d.relative_path not in excluded], limit=limit)


def _random_text(rng: random.Random, kind: str) -> str:
    body = " ".join(rng.choices(WORDS, k=rng.randint(0, 30)))
    name = " ".join(rng.choices(WORDS, k=2))
    if rng.random() < 0.1:
        return f"---\r\ntype: {kind}\r\n---\r\n{body}"  # CRLF: not a memory doc (parity)
    if rng.random() < 0.1:
        return f"---\nname: {name}: x\ntype: {kind}\n---\n{body}"  # needs the YAML fallback
    return render_topic(name=name, description=" ".join(rng.choices(WORDS, k=3)), kind=kind,  # type: ignore[arg-type]
                        body=body or "_No entries yet._")


def _mutate(store: Store, rng: random.Random, clock: FixedClock, step: int) -> None:
    keys = [k for k in store.list() if k.endswith(".md")]
    roll = rng.random()
    if keys and roll < 0.15:
        store.delete(rng.choice(keys))
        return
    key = rng.choice(keys) if keys and roll < 0.5 else f"{rng.choice(MEMORY_TYPES)}/f{step}.md"
    if rng.random() < 0.05:
        key = "MEMORY.md" if rng.random() < 0.5 else "notes.txt"
    store.write(key, _random_text(rng, rng.choice(MEMORY_TYPES)))
    if rng.random() < 0.5:
        store.set_mtime(key, to_ms(T0 - timedelta(days=rng.randint(0, 4))))  # ties and old files
    clock.advance(timedelta(seconds=rng.choice([0, 1])))


@pytest.mark.parametrize("seed", range(4))
def test_cached_recall_equals_uncached_on_a_changing_store(store: Store, clock: FixedClock, seed: int) -> None:
    rng = random.Random(seed)
    cache = RecallCache()
    for step in range(25):
        _mutate(store, rng, clock, step)
        for _ in range(3):  # the first call after a change ranks directly, later ones through the index
            query = " ".join(rng.choices([*WORDS, "nothing"], k=rng.randint(0, 4)))
            excluded = set(rng.sample(store.list(), k=min(2, len(store.list()))))
            limit = rng.randint(0, 6)
            expected = recall(store, query, now=clock.now(), excluded=excluded, limit=limit)
            assert recall(store, query, now=clock.now(), excluded=excluded, limit=limit, cache=cache) == expected
        assert cached_scan(store, cache) == scan(store)


def test_cached_model_request_is_the_same(store: Store, clock: FixedClock) -> None:
    rng = random.Random(5)
    for step in range(8):
        _mutate(store, rng, clock, step)
    paths = [d.relative_path for d in scan(store).docs][:2]
    plain, cached = ScriptedModel.of([{"selected_memories": paths}]), ScriptedModel.of([{"selected_memories": paths}])
    expected = recall(store, "release rule", now=clock.now(), model=plain)
    assert recall(store, "release rule", now=clock.now(), model=cached, cache=RecallCache()) == expected
    assert cached.calls == plain.calls


def test_unchanged_store_is_not_rescanned(store: Store, clock: FixedClock) -> None:
    cache = RecallCache()
    store.write("user/a.md", render_topic(name="A", description="terse", kind="user", body="Prefers terse replies."))
    for _ in range(3):
        recall(store, "terse", now=clock.now(), cache=cache)
    assert cache.scans == 1
    assert isinstance(cache.index, HeuristicIndex)  # the second call built the query index
    store.write("user/a.md", render_topic(name="A", description="terse", kind="user", body="Prefers short replies."))
    out = recall(store, "short", now=clock.now(), cache=cache)
    assert cache.scans == 2
    assert "short replies" in out.prompt


def test_a_replaced_score_doc_is_honoured(monkeypatch: pytest.MonkeyPatch, store: Store, clock: FixedClock) -> None:
    for i, body in enumerate(["release", "", "release notes"]):
        store.write(f"project/p{i}.md", render_topic(name=f"P{i}", description="", kind="project", body=body))
    cache = RecallCache()
    recall(store, "release", now=clock.now(), cache=cache)
    monkeypatch.setattr(recall_mod, "score_doc", lambda tokens, doc: 1 if doc.body == "" else 0)
    out = recall(store, "release", now=clock.now(), cache=cache)
    assert [d.relative_path for d in out.selected] == ["project/p1.md"]


def test_odd_files_scan_exactly_like_scan(tmp_path: Path, clock: FixedClock) -> None:
    store = FileStore(tmp_path / "memory", clock)
    store.write("user/good.md", render_topic(name="Good", description="", kind="user", body="fine"))
    store.write("user/sub/MEMORY.md", "not an index at the root, still skipped")
    store.write("notes.txt", "not markdown")
    store.write("user/bad.md", "---\ntype: user\n---\n")
    (tmp_path / "memory" / "latin1.md").write_bytes(b"---\ntype: user\n---\ncaf\xe9")
    (tmp_path / "memory" / "broken.md").symlink_to(tmp_path / "nowhere.md")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "x.md").write_text(render_topic(name="X", description="", kind="user", body="x"))
    (tmp_path / "memory" / "linked").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "memory" / "back\\slash.md").write_text("---\ntype: user\n---\nb")
    cache = RecallCache()
    for _ in range(2):
        assert cached_scan(store, cache) == scan(store)
    for name in ("latin1.md", "broken.md", "back\\slash.md"):
        (tmp_path / "memory" / name).unlink()
    (tmp_path / "memory" / "latin1.md").write_text(render_topic(name="L", description="", kind="user", body="ok"))
    assert cached_scan(store, cache) == scan(store)
    assert cache.signature is not None  # nothing unusual left: the next call may reuse the scan


def test_recall_cache_is_a_doc_cache_other_operations_can_share(tmp_path: Path, clock: FixedClock) -> None:
    store = FileStore(tmp_path / "memory", clock)
    store.write("user/a.md", render_topic(name="A", description="", kind="user", body="x"))
    cache = RecallCache()
    assert isinstance(cache, DocCache)
    recall(store, "anything", now=clock.now(), cache=cache)
    assert scan(store, cache=cache).docs == cached_scan(store, cache).docs
    assert cache.hits >= 1
    assert os.path.isdir(store.root)


ODD_KINDS = ("regular", "latin1_name", "link_inside", "link_outside", "link_broken", "dir_link", "fifo",
             "backslash", "nested_index", "latin1_content", "empty", "not_markdown")


def _plant(root: Path, outside: Path, kind: str, i: int) -> None:
    """One file of ``kind`` in the memory dir, the way another program could have left it."""
    topic = render_topic(name=f"N{i}", description=f"d{i}", kind="user", body=f"release note {i}")
    sub = root / ("user" if i % 2 else "project")
    sub.mkdir(parents=True, exist_ok=True)
    if kind == "regular":
        (sub / f"r{i}.md").write_text(topic)
    elif kind == "latin1_name":
        with open(os.fsencode(sub) + f"/caf\xe9{i}.md".encode("latin-1"), "w") as handle:
            handle.write(topic)
    elif kind == "link_inside":
        (root / f"target{i}.md").write_text(topic)
        (sub / f"in{i}.md").symlink_to(root / f"target{i}.md")
    elif kind == "link_outside":
        (outside / f"o{i}.md").write_text(topic)
        (sub / f"out{i}.md").symlink_to(outside / f"o{i}.md")
    elif kind == "link_broken":
        (sub / f"broken{i}.md").symlink_to(outside / f"missing{i}.md")
    elif kind == "dir_link":
        (outside / f"d{i}").mkdir()
        (outside / f"d{i}" / "x.md").write_text(topic)
        (sub / f"dir{i}").symlink_to(outside / f"d{i}")
    elif kind == "fifo":
        os.mkfifo(sub / f"fifo{i}.md")
    elif kind == "backslash":
        (sub / f"back\\{i}.md").write_text(topic)
    elif kind == "nested_index":
        (sub / "MEMORY.md").write_text(topic)
    elif kind == "latin1_content":
        (sub / f"l{i}.md").write_bytes(topic.encode("utf-8") + b"caf\xe9")
    elif kind == "empty":
        (sub / f"e{i}.md").write_text("")
    else:
        (sub / f"t{i}.txt").write_text(topic)


@given(st.lists(st.sampled_from(ODD_KINDS), min_size=1, max_size=8), st.randoms(use_true_random=False))
def test_any_memory_dir_scans_exactly_like_scan_cold_warm_and_after_a_change(kinds: list[str], rng: random.Random) -> None:
    """The fast path (os.scandir, plain reads) gives exactly scan()'s result for any mix of odd files another program
    could leave: links leaving the root (refused by the store) and non-UTF-8 names (dropped) included."""
    import tempfile  # a fresh directory per example: Hypothesis cannot take a function-scoped tmp_path

    clock = FixedClock(T0)
    with tempfile.TemporaryDirectory() as tmp:
        root, outside = Path(tmp) / "memory", Path(tmp) / "outside"
        root.mkdir()
        outside.mkdir()
        for i, kind in enumerate(kinds):
            _plant(root, outside, kind, i)
        store, cache = FileStore(root, clock), RecallCache()
        for _ in range(2):
            assert cached_scan(store, cache) == scan(store)
        _plant(root, outside, rng.choice(ODD_KINDS), len(kinds))
        assert cached_scan(store, cache) == scan(store)
        query = "release note"
        assert recall(store, query, now=clock.now(), cache=cache) == recall(store, query, now=clock.now())
