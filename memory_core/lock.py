"""The consolidation lock: PID file, liveness, staleness (spec §6.3)."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable
from datetime import datetime
from typing import Final

from memory_core.formats import to_ms
from memory_core.store import LOCK_KEY, Store

DREAM_LOCK_STALE_MS: Final = 60 * 60 * 1000
PidAlive = Callable[[int], bool]


def pid_alive(pid: int) -> bool:
    """Whether a process with ``pid`` exists.

    fix: spec §12 — upstream treats EPERM (a live process of another user) as dead and steals its lock;
    here EPERM means alive.
    """
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno == errno.EPERM
    return True


def _parse_pid(text: str) -> int | None:
    stripped = text.strip()
    if not stripped.isdigit():
        return None
    pid = int(stripped)
    return pid if pid > 0 else None


def lock_held(store: Store, *, now: datetime, alive: PidAlive = pid_alive) -> bool:
    """True when a fresh lock names a live PID; a stale or PID-less lock is deleted (spec §6.3)."""
    stat = store.stat(LOCK_KEY)
    if stat is None:
        return False
    try:
        text = store.read(LOCK_KEY)
    except OSError:
        return False
    pid = _parse_pid(text)
    if to_ms(now) - stat.mtime_ms <= DREAM_LOCK_STALE_MS and pid is not None and alive(pid):
        return True
    with contextlib.suppress(OSError):
        store.delete(LOCK_KEY)
    return False


def acquire_lock(store: Store, *, pid: int) -> bool:
    """Exclusive-create the lock holding ``pid``; False when it already exists."""
    return store.create(LOCK_KEY, str(pid))


def release_lock(store: Store) -> None:
    """Force-remove the lock."""
    with contextlib.suppress(OSError):
        store.delete(LOCK_KEY)
