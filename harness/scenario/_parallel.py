"""Loading a large suite on several cores (``memharness run --jobs N``): the files are parsed in worker processes
and the scenarios come back pickled, in ``discover`` order, so the first error raised is the one a serial load
raises. Parsing is the largest serial part of a parallel run (~1 s per 1,000 scenarios), which capped ``--jobs 2``
below 1.7x (issue 34)."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from harness.errors import child_signals
from harness.scenario._types import Scenario

MIN_FILES_PER_JOB = 50
"""Below this many files per worker, starting the workers costs more than it saves: the load stays serial."""


def _ignore_sigint() -> None:
    child_signals(pool=True)


def load_parallel(found: Sequence[tuple[Path, Path]], jobs: int,
                  load: Callable[[tuple[Path, Path]], Scenario]) -> list[Scenario] | None:
    """Every ``(file, suite root)`` loaded by ``load`` in ``jobs`` forked workers, or None when it is not worth it
    (few files, one job, no ``fork``) or the workers died (the caller then loads serially, in this process, which
    meets the same file the same way and reports it as a serial load does)."""
    jobs = min(jobs, len(found) // MIN_FILES_PER_JOB)
    if jobs < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return None
    context = multiprocessing.get_context("fork")  # the workers inherit the imports: nothing to start but a fork
    try:
        with ProcessPoolExecutor(jobs, mp_context=context, initializer=_ignore_sigint) as pool:
            return list(pool.map(load, found, chunksize=max(1, len(found) // (jobs * 8))))
    except BrokenProcessPool:
        return None
