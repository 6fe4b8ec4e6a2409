"""Hostile memory directories (issues 14, 23): FIFOs, devices, symlinks out of the root, huge files, non-UTF-8
names, garbage state files and locks. Each case asserts its outcome class, each operation within 2 s."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_core.clock import FixedClock
from memory_core.files.dream import DreamScheduler
from memory_core.files.extract import ExtractRequest, run_extract
from memory_core.files.history import ChatMessage
from memory_core.files.lock import lock_held
from memory_core.files.recall import recall
from memory_core.files.scan import scan
from memory_core.files.sessions import InMemorySessions
from memory_core.files.state import read_cursor, read_meta
from memory_core.files.store import CURSOR_KEY, INDEX_KEY, LOCK_KEY, MAX_FILE_BYTES, META_KEY, FileStore, InMemoryStore
from tests.conftest import T0
from tests.helpers import examples
from tests.hostile.checks import index_targets
from tests.hostile.harness import run_all, run_direct, seeded_store, within

SECRET = "TOP-SECRET-OUTSIDE-TEXT"
DOC = "---\nname: {n}\ndescription: {d}\ntype: user\n---\n\n{b}\n"


def _all_root_text(store: FileStore) -> str:
    out = []
    for dirpath, _dirs, files in os.walk(store.root):
        for name in files:
            path = Path(dirpath, name)
            if not path.is_symlink() and path.is_file():
                out.append(path.read_bytes().decode("utf-8", "replace"))
    return "\n".join(out)


def _assert_healthy(store: FileStore, results: object) -> None:
    r = results
    assert r.extract.status == "completed", r.extract  # type: ignore[attr-defined]
    assert r.dream.status in ("updated", "noop"), r.dream  # type: ignore[attr-defined]
    assert r.forget.error is None, r.forget  # type: ignore[attr-defined]
    docs = scan(store).docs
    index_targets(store.read(INDEX_KEY), docs=len(docs))


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "dev_null_dir", "dangling"])
def test_special_topic_files_are_skipped_with_a_warning(tmp_path: Path, kind: str) -> None:
    store = seeded_store(tmp_path)
    target = store.root / "user" / "special.md"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "dev_zero":
        target.symlink_to("/dev/zero")
    elif kind == "dev_null_dir":
        target.mkdir()
    else:
        target.symlink_to(store.root / "nowhere.md")
    results = run_all(store)
    _assert_healthy(store, results)
    if kind in ("fifo", "dev_zero"):
        assert any("user/special.md: skipped" in w for w in results.extract.warnings)
        assert any("user/special.md: skipped" in w for w in results.dream.warnings)
    run_direct(store)


def test_symlink_out_of_the_root_is_never_read_nor_merged(tmp_path: Path) -> None:
    store = seeded_store(tmp_path)
    outside = tmp_path / "secret.md"
    outside.write_text(DOC.format(n=SECRET, d=SECRET, b=f"Prefers terse answers\n\n{SECRET}"))
    (store.root / "user" / "leak.md").symlink_to(outside)
    (store.root / "user" / "dup.md").symlink_to(outside)  # two links: dream would love to merge them
    results = run_all(store, query=f"terse answers {SECRET}")
    _assert_healthy(store, results)
    assert SECRET not in results.recall.prompt
    assert SECRET not in store.read(INDEX_KEY)
    assert any("user/leak.md: skipped (unreadable: UnsafePathError" in w for w in results.dream.warnings)
    (store.root / "user" / "leak.md").unlink()
    (store.root / "user" / "dup.md").unlink()
    assert SECRET not in _all_root_text(store)
    assert SECRET in outside.read_text()  # and the outside file is untouched


def test_symlinked_topic_directory_out_of_the_root(tmp_path: Path) -> None:
    store = seeded_store(tmp_path)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "x.md").write_text(DOC.format(n=SECRET, d=SECRET, b=SECRET))
    (store.root / "reference").symlink_to(outside, target_is_directory=True)
    request = ExtractRequest("s", (ChatMessage("user", "The runbook lives in the ops wiki at go/runbook"),))
    out = within(lambda: run_extract(store, request, now=T0, root=str(store.root)))
    assert out.status == "failed"
    assert out.error is not None
    assert out.error.startswith("UnsafePathError: memory key 'reference/")
    assert os.listdir(outside) == ["x.md"]  # nothing written through the link
    assert SECRET not in store.read(INDEX_KEY)


def test_oversized_topic_file_is_skipped(tmp_path: Path) -> None:
    store = seeded_store(tmp_path)
    (store.root / "user" / "huge.md").write_text(DOC.format(n="h", d="h", b="x" * (MAX_FILE_BYTES + 10)))
    results = run_all(store)
    _assert_healthy(store, results)
    assert any("user/huge.md: skipped (unreadable: StoreError" in w for w in results.dream.warnings)


def test_non_utf8_file_name_does_not_break_rebuild_or_dream(tmp_path: Path) -> None:
    store = seeded_store(tmp_path)
    name = os.fsdecode(b"user/bad-\xff\xfe.md")
    (store.root / name).write_text(DOC.format(n="n", d="d", b="Prefers terse answers"))
    results = run_all(store)
    _assert_healthy(store, results)
    assert any("file name is not UTF-8" in w for w in results.dream.warnings)
    run_direct(store)


GARBAGE_STATE = [b"", b"{", b"\xff\xfe\x00", b"[" * 100_000, b'{"a":' * 5000 + b"1" + b"}" * 5000,
                 b"1" * 100_000, b"[]", b"null", b'{"processedOffset": -5, "sessionId": "s1"}',
                 b'{"lastDreamAt": "9999-12-31T23:59:59.999+14:00", "processedOffset": true}',
                 b" " * (MAX_FILE_BYTES + 1)]


@pytest.mark.parametrize("key", [META_KEY, CURSOR_KEY])
@pytest.mark.parametrize("data", GARBAGE_STATE, ids=range(len(GARBAGE_STATE)))
def test_garbage_state_files_are_ignored_with_a_warning_and_rebuilt(tmp_path: Path, key: str, data: bytes) -> None:
    store = seeded_store(tmp_path)
    path = store.root.parent / key.removeprefix("../")
    path.write_bytes(data)
    results = run_all(store)
    _assert_healthy(store, results)
    name = key.removeprefix("../")
    warned = [w for e in results.sink.events for w in getattr(e, "warnings", ()) if w.startswith(f"{name}:")]
    try:
        usable = isinstance(json.loads(data), dict) and len(data) < 65536
    except (ValueError, RecursionError):
        usable = False
    assert bool(warned) is not usable
    assert isinstance(json.loads(path.read_text()), dict)  # rebuilt
    run_direct(store)


@pytest.mark.parametrize("key", [META_KEY, CURSOR_KEY, LOCK_KEY])
def test_state_file_that_is_a_fifo(tmp_path: Path, key: str) -> None:
    store = seeded_store(tmp_path)
    os.mkfifo(store.root.parent / key.removeprefix("../"))
    results = run_all(store)
    assert results.extract.status == "completed"
    if key == LOCK_KEY:  # unreadable and young: held, never stolen
        assert (results.dream.status, results.dream.skipped_reason) == ("skipped", "locked")
        return
    assert results.dream.status in ("noop", "updated")
    warned = [w for e in results.sink.events for w in getattr(e, "warnings", ())]
    assert any(w.startswith(f"{key.removeprefix('../')}: unreadable (StoreError") for w in warned), warned
    assert (store.root.parent / key.removeprefix("../")).is_file()  # replaced by a regular file


LOCKS = [b"", b"abc", b"99999999999999999999999", b"\xff", b"\x00" * 10, b"-1", b"0", b"12 34", b"\n\n",
         b"1" * 5000, str(2**31).encode()]


@pytest.mark.parametrize("data", LOCKS, ids=range(len(LOCKS)))
def test_garbage_lock_never_raises_and_is_held_while_young(tmp_path: Path, data: bytes) -> None:
    store = seeded_store(tmp_path)
    lock = store.root.parent / "consolidation.lock"
    lock.write_bytes(data)
    os.utime(lock, (T0.timestamp(), T0.timestamp()))
    assert within(lambda: lock_held(store, now=T0)) is True
    out = DreamScheduler(store, InMemorySessions()).schedule(now=T0, session_id="s", force=True)
    assert (out.status, out.skipped_reason) == ("skipped", "locked")
    later = T0.replace(hour=T0.hour + 2)
    out = within(lambda: DreamScheduler(store, InMemorySessions()).schedule(now=later, session_id="s", force=True))
    assert out.status in ("updated", "noop")  # stale after an hour: taken over, and released afterwards
    assert not lock.exists()


@settings(max_examples=examples(40), deadline=None)
@given(meta=st.binary(max_size=200), cursor=st.binary(max_size=200), lock=st.binary(max_size=40))
def test_schedulers_never_raise_on_any_state_bytes(meta: bytes, cursor: bytes, lock: bytes) -> None:
    store = InMemoryStore(FixedClock(T0))
    for key, data in ((META_KEY, meta), (CURSOR_KEY, cursor), (LOCK_KEY, lock)):
        store.write(key, data.decode("utf-8", "surrogateescape"))
    results = run_all(store)
    assert results.extract.status in ("completed", "failed")
    assert results.dream.status in ("updated", "noop", "skipped")
    assert isinstance(read_meta(store) or {}, dict)
    assert isinstance(read_cursor(store), dict)


def test_lone_surrogate_query_never_raises(tmp_path: Path) -> None:
    store = seeded_store(tmp_path)
    out = within(lambda: recall(store, "terse \ud800 answers", now=T0))
    assert out.strategy in ("heuristic", "none")
    results = run_all(store, query="\udcff\ud800")
    _assert_healthy(store, results)


@pytest.mark.parametrize("frontmatter", [
    "name: x\ndescription: y\ntype: user\n" + "".join(f"k{i}: [a, {{c: d}}]\n" for i in range(2000)),
    "name: x\ndescription: y\ntype: user\nz: " + "[" * 20_000 + "]" * 20_000 + "\n",
    "name: x\ntype: user\n" + "a: &a [x]\n" + "".join(f"b{i}: &b{i} [*a, *a, *a]\n" for i in range(3)),
])
def test_huge_deep_or_aliased_frontmatter_is_bounded(tmp_path: Path, frontmatter: str) -> None:
    store = seeded_store(tmp_path)
    store.write("user/fm.md", f"---\n{frontmatter}---\n\nPrefers terse answers\n")
    results = run_all(store)
    _assert_healthy(store, results)
    if len(frontmatter) > 16 * 1024:
        assert any("user/fm.md: skipped (unreadable: ValueError: frontmatter of" in w for w in results.dream.warnings)


def test_state_file_that_is_a_directory_fails_with_a_located_one_line_error(tmp_path: Path) -> None:
    store = seeded_store(tmp_path)
    (store.root.parent / "meta.json").mkdir()
    results = run_all(store)
    for out in (results.extract, results.dream):
        assert out.status == "failed"
        assert out.error is not None
        assert "meta.json" in out.error
        assert "\n" not in out.error
    assert [e.error for e in results.sink.events if getattr(e, "status", "") == "failed"] == [
        results.extract.error, results.dream.error]
