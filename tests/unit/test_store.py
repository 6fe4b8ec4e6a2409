from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory_core.clock import FixedClock
from memory_core.errors import UnsafePathError
from memory_core.files.formats import to_ms
from memory_core.files.store import CURSOR_KEY, FSYNC_ENV, LOCK_KEY, META_KEY, FileStore, Store, check_key
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


class _Crash(BaseException):
    """Stands for a SIGKILL at one point of a write (BaseException: nothing may catch it)."""


@pytest.mark.parametrize("point", ["os.replace", "os.utime", "os.fsync"])
def test_write_interrupted_at_any_point_leaves_old_or_new_never_partial(
    tmp_path: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    monkeypatch.delenv(FSYNC_ENV)  # the default: every write is fsynced, and a crash there is one more point
    fs = FileStore(tmp_path / "memory", clock)
    fs.write("a.md", "old text")

    def crash(*_args: object, **_kwargs: object) -> None:
        raise _Crash

    monkeypatch.setattr(point, crash)
    with pytest.raises(_Crash):
        fs.write("a.md", "new text that is longer")
    monkeypatch.undo()
    assert fs.read("a.md") == "old text"
    assert fs.list() == ["a.md"]  # a temp file a crash leaves is never listed


@pytest.mark.parametrize("point", ["os.link", "os.utime", "os.fsync"])
def test_create_interrupted_leaves_nothing_and_never_an_empty_file(
    tmp_path: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    monkeypatch.delenv(FSYNC_ENV)  # the default: every write is fsynced, and a crash there is one more point
    fs = FileStore(tmp_path / "memory", clock)

    def crash(*_args: object, **_kwargs: object) -> None:
        raise _Crash

    monkeypatch.setattr(point, crash)
    with pytest.raises(_Crash):
        fs.create(META_KEY, '{"version": 1}\n')
    monkeypatch.undo()
    assert fs.stat(META_KEY) is None  # not an empty meta.json
    assert fs.create(META_KEY, '{"version": 1}\n') is True
    assert fs.read(META_KEY) == '{"version": 1}\n'


def test_create_never_overwrites(tmp_path: Path, clock: FixedClock) -> None:
    fs = FileStore(tmp_path / "memory", clock)
    assert fs.create("a.md", "first") is True
    assert fs.create("a.md", "second") is False
    assert fs.read("a.md") == "first"
    assert sorted(os.listdir(tmp_path / "memory")) == ["a.md"]


@pytest.mark.parametrize("kind", ["fifo", "dir", "dev_zero", "outside", "huge"])
def test_reads_take_regular_files_inside_the_root_only(tmp_path: Path, clock: FixedClock, kind: str) -> None:
    from memory_core.errors import StoreError
    from memory_core.files.store import MAX_FILE_BYTES

    root = tmp_path / "memory"
    root.mkdir()
    target = root / "x.md"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "dir":
        target.mkdir()
    elif kind == "dev_zero":
        target.symlink_to("/dev/zero")
    elif kind == "outside":
        (tmp_path / "secret").write_text("s")
        target.symlink_to(tmp_path / "secret")
    else:
        target.write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    expected = UnsafePathError if kind in ("outside", "dev_zero") else StoreError
    with pytest.raises(expected):
        FileStore(root, clock).read("x.md")


def test_symlink_inside_the_root_is_read(tmp_path: Path, clock: FixedClock) -> None:
    fs = FileStore(tmp_path / "memory", clock)
    fs.write("a.md", "A")
    (tmp_path / "memory" / "b.md").symlink_to(tmp_path / "memory" / "a.md")
    assert fs.read("b.md") == "A"


def test_delete_never_acts_through_a_directory_link(tmp_path: Path, clock: FixedClock) -> None:
    root = tmp_path / "memory"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.md").write_text("k")
    (root / "evil").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UnsafePathError):
        FileStore(root, clock).delete("evil/keep.md")
    assert (outside / "keep.md").exists()
