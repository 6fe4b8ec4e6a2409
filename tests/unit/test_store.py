from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory_core.clock import FixedClock
from memory_core.errors import UnsafePathError
from memory_core.formats import to_ms
from memory_core.store import CURSOR_KEY, LOCK_KEY, META_KEY, FileStore, Store, check_key
from tests.conftest import T0


def test_write_read_list_delete(store: Store) -> None:
    store.write("user/a.md", "A")
    store.write("MEMORY.md", "")
    store.write(META_KEY, "{}")
    assert store.list() == ["MEMORY.md", "user/a.md"]  # state files are beside the root, not in it
    assert store.read("user/a.md") == "A"
    assert store.delete("user/a.md") is True
    assert store.delete("user/a.md") is False
    with pytest.raises(FileNotFoundError):
        store.read("user/a.md")


def test_create_is_exclusive(store: Store) -> None:
    assert store.create(LOCK_KEY, "123") is True
    assert store.create(LOCK_KEY, "456") is False
    assert store.read(LOCK_KEY) == "123"


def test_mtime_comes_from_the_clock(store: Store, clock: FixedClock) -> None:
    store.write("a.md", "x")
    stat = store.stat("a.md")
    assert stat is not None
    assert stat.mtime_ms == pytest.approx(to_ms(T0), abs=0.01)
    assert stat.size == 1
    store.set_mtime("a.md", 1000.0)
    assert store.stat("a.md").mtime_ms == pytest.approx(1000.0)  # type: ignore[union-attr]
    assert store.stat("missing.md") is None


@pytest.mark.parametrize("key", ["../x.md", "/abs.md", "a/../../x", "a\\b.md", "nul\x00.md", "."])
def test_keys_outside_the_root_are_refused(store: Store, key: str) -> None:
    with pytest.raises(UnsafePathError):
        store.write(key, "x")


def test_state_keys_are_allowed() -> None:
    assert check_key(CURSOR_KEY) == CURSOR_KEY


def test_file_store_writes_state_beside_root_and_leaves_no_temp_files(tmp_path: Path, clock: FixedClock) -> None:
    fs = FileStore(tmp_path / "s" / "memory", clock)
    fs.write(META_KEY, "{}\n")
    fs.write("user/x.md", "hello")
    assert (tmp_path / "s" / "meta.json").read_text() == "{}\n"
    assert sorted(os.listdir(tmp_path / "s" / "memory" / "user")) == ["x.md"]


def test_file_store_refuses_symlink_escape(tmp_path: Path, clock: FixedClock) -> None:
    root = tmp_path / "memory"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "evil").symlink_to(outside, target_is_directory=True)
    fs = FileStore(root, clock)
    with pytest.raises(UnsafePathError, match="symlink escape"):
        fs.write("evil/x.md", "x")
    with pytest.raises(UnsafePathError, match="symlink escape"):
        fs.create("evil/deeper/y.md", "y")
    assert list(outside.iterdir()) == []  # no file, and no directory created through the link


def test_failed_write_leaves_the_old_file_intact(tmp_path: Path, clock: FixedClock) -> None:
    fs = FileStore(tmp_path / "memory", clock)
    fs.write("a.md", "old")
    with pytest.raises(UnicodeEncodeError):
        fs.write("a.md", "bad \ud800 surrogate")
    assert fs.read("a.md") == "old"
    assert os.listdir(tmp_path / "memory") == ["a.md"]


def test_missing_root_lists_nothing(tmp_path: Path, clock: FixedClock) -> None:
    assert FileStore(tmp_path / "nope", clock).list() == []
