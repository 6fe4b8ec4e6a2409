"""A child process of the concurrent-dream test: forces a dream each round and logs every lock window and store
mutation with a system-wide monotonic timestamp. The test forks it (``race``); it also runs as a script:
``dream_child.py ROOT LOG ROUNDS INTERVAL SEED``.
"""

from __future__ import annotations

import os
import random
import sys
import time
from pathlib import Path
from typing import Any


def main() -> int:
    return race(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]))


def race(root: Path, log_path: Path, rounds: int, interval: float, seed: int) -> int:
    """Force a dream at each round's start plus 0-2 ms of jitter; log lock windows, mutations and outcomes."""
    from memory_core.clock import SystemClock
    from memory_core.files import dream
    from memory_core.files.sessions import InMemorySessions
    from memory_core.files.store import FileStore

    pid = os.getpid()
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def log(kind: str, detail: str = "-") -> None:
        os.write(fd, f"{pid} {kind} {time.monotonic_ns()} {detail}\n".encode())

    class LoggingStore(FileStore):
        def write(self, key: str, text: str) -> None:
            log("mut", key)
            FileStore.write(self, key, text)

        def create(self, key: str, text: str) -> bool:
            log("mut", key)
            return FileStore.create(self, key, text)

        def delete(self, key: str) -> bool:
            log("mut", key)
            return FileStore.delete(self, key)

    real_acquire, real_release, real_run = (getattr(dream, n) for n in ("acquire_lock", "release_lock", "run_dream"))

    def acquire(*args: Any, **kwargs: Any) -> bool:
        ok = bool(real_acquire(*args, **kwargs))
        if ok:
            log("enter")
        return ok

    def release(*args: Any, **kwargs: Any) -> None:
        log("exit")
        real_release(*args, **kwargs)

    def run(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.002)  # widen the window a second dream would have to hit
        return real_run(*args, **kwargs)

    for name, fn in (("acquire_lock", acquire), ("release_lock", release), ("run_dream", run)):
        setattr(dream, name, fn)
    store = LoggingStore(root, SystemClock())
    scheduler = dream.DreamScheduler(store, InMemorySessions())
    log("ready")
    go = log_path.with_name("go")
    while not go.exists():
        time.sleep(0.001)
    t0 = float(go.read_text())
    rng = random.Random(seed)
    for r in range(rounds):
        target = t0 + r * interval + rng.uniform(0.0, 0.002)  # staggered arrivals: 0-2 ms jitter
        while (delay := target - time.time()) > 0:
            time.sleep(min(delay, 0.0005))
        out = scheduler.schedule(now=SystemClock().now(), session_id=f"s{pid}", force=True)
        log("outcome", f"{r}:{out.status}:{out.skipped_reason}:{out.error}".replace(" ", "_"))
    os.close(fd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
