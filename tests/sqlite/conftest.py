"""Fixtures for the SQLite memory: a factory of ``SqliteMemory`` instances on a fixed clock in a scratch dir."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memory_core.clock import FixedClock
from memory_core.model import Model
from memory_core.sqlite import Quirks, SqliteMemory

T0 = datetime(2026, 4, 1, 8, 0, tzinfo=UTC)
Factory = Callable[..., SqliteMemory]
FAST_DIR = Path("/dev/shm")


def scratch_dir() -> Path:
    """A fresh directory on tmpfs when there is one (SQLite opens and fsyncs are ~5x cheaper), else the temp dir."""
    base = FAST_DIR if FAST_DIR.is_dir() and os.access(FAST_DIR, os.W_OK) else None
    return Path(tempfile.mkdtemp(prefix="sqlite-mem-", dir=base))


@contextmanager
def scratch() -> Iterator[Path]:
    """A ``scratch_dir()`` removed afterwards (for Hypothesis tests, which cannot take a function-scoped fixture)."""
    path = scratch_dir()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def db_dir(tmp_path: Path) -> Iterator[Path]:
    """Where test databases live; removed afterwards."""
    path = scratch_dir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(T0)


@pytest.fixture
def make(db_dir: Path, clock: FixedClock) -> Iterator[Factory]:
    """``make(mode_or_quirks="fixed", model=None, name="m", **kwargs)`` → an open ``SqliteMemory``."""
    opened: list[SqliteMemory] = []

    def factory(quirks: Quirks | str = "fixed", model: Model | None = None, name: str = "m", **kwargs: Any) -> SqliteMemory:
        q = Quirks.parse(quirks) if isinstance(quirks, str) else quirks
        mem = SqliteMemory(db_dir / f"{name}.db", clock, model, q, **kwargs)
        opened.append(mem)
        return mem

    yield factory
    for mem in opened:
        mem.close()


def row(mem: SqliteMemory, memory_id: str) -> dict[str, Any] | None:
    return mem.db.get_memory(memory_id)


def backdate(mem: SqliteMemory, memory_id: str, **stamps: str) -> None:
    """UPDATE timestamps directly (the seed's save path cannot backdate ``updated_at``, Q14)."""
    sets = ", ".join(f"{k}=?" for k in stamps)
    mem.db.conn.execute(f"UPDATE memories SET {sets} WHERE id=?", [*stamps.values(), memory_id])
    mem.db.conn.commit()
