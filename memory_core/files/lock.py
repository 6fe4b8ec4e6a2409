"""The consolidation lock: PID file, liveness, staleness (spec §6.3), acquired atomically.

The lock file holds ``<pid>\\n<ISO time>\\n``. It is created in one step (``Store.create``: a complete temp file
linked into place, so no reader ever sees it empty), and the check-stale / delete / create sequence runs under the
store's ``exclusive()`` guard (an OS ``flock`` for ``FileStore``) so two processes cannot both judge the same lock
stale and both take it.

fix: spec §6.3 — upstream treats an empty or PID-less lock as stale and deletes it; a lock is written in two steps
there, so a reader in between stole a live lock. Here a lock whose content does not parse (empty, garbage, a PID
too large to be one, bytes that are not UTF-8) is held while it is younger than ``DREAM_LOCK_STALE_MS``, and stale
after. Nothing in a lock file can make these functions raise.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Final

from memory_core.files.formats import iso_ms, to_ms
from memory_core.files.store import LOCK_KEY, Store

DREAM_LOCK_STALE_MS: Final = 60 * 60 * 1000
MAX_PID: Final = 2**31 - 1
"""Larger numbers are no PID (``os.kill`` would overflow); such a lock counts as unparsable."""
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
    except (OverflowError, ValueError):
        return False
    return True


def parse_pid(text: str) -> int | None:
    """The PID on the first line of a lock, or None when there is none (empty, garbage, out of range)."""
    first = text.strip().split("\n", 1)[0].strip()
    if not first.isascii() or not first.isdigit() or len(first) > 10:
        return None
    pid = int(first)
    return pid if 0 < pid <= MAX_PID else None




def _lock_state(store: Store, *, now: datetime, alive: PidAlive) -> str:
    """``absent`` | ``held`` | ``stale``."""
    try:
        stat = store.stat(LOCK_KEY)
    except (OSError, ValueError):  # the lock's stat failed: cannot tell, so do not steal
        return "held"
    if stat is None:
        return "absent"
    try:
        pid = parse_pid(store.read(LOCK_KEY))
    except FileNotFoundError:
        return "absent"
    except (OSError, ValueError):
        pid = None  # unreadable, not UTF-8, not a regular file: unparsable
    young = to_ms(now) - stat.mtime_ms <= DREAM_LOCK_STALE_MS
    if pid is None:
        return "held" if young else "stale"
    try:
        live = alive(pid)
    except (OSError, OverflowError, ValueError):
        live = True
    return "held" if young and live else "stale"


@contextlib.contextmanager
def _guard(store: Store) -> Iterator[None]:
    exclusive = getattr(store, "exclusive", None)
    if exclusive is None:
        yield
        return
    with exclusive():
        yield


def lock_held(store: Store, *, now: datetime, alive: PidAlive = pid_alive) -> bool:
    """True when a fresh lock names a live PID, or is unparsable but fresh; a stale lock is deleted (spec §6.3)."""
    with _guard(store):
        state = _lock_state(store, now=now, alive=alive)
        if state == "stale":
            with contextlib.suppress(OSError, ValueError):
                store.delete(LOCK_KEY)
        return state == "held"


def acquire_lock(store: Store, *, pid: int, now: datetime | None = None, alive: PidAlive = pid_alive) -> bool:
    """Take the lock for ``pid`` in one atomic step; False when another holder has it.

    With ``now`` a stale lock is removed first (under the same guard); without it only an absent lock is taken.
    """
    with _guard(store):
        if now is not None:
            state = _lock_state(store, now=now, alive=alive)
            if state == "held":
                return False
            if state == "stale":
                with contextlib.suppress(OSError, ValueError):
                    store.delete(LOCK_KEY)
        stamp = f"\n{iso_ms(now)}" if now is not None else ""
        try:
            return store.create(LOCK_KEY, f"{pid}{stamp}\n")
        except (OSError, ValueError):
            return False


def release_lock(store: Store, *, pid: int | None = None) -> None:
    """Remove the lock; with ``pid``, only when the lock still names that PID (never someone else's lock)."""
    with _guard(store), contextlib.suppress(OSError, ValueError):
        if pid is not None and parse_pid(store.read(LOCK_KEY)) != pid:
            return
        store.delete(LOCK_KEY)
