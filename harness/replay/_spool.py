"""Scenario results on disk as they finish: a run's memory does not grow with its suite (issue 34).

A :class:`ResultSpool` is a ``Sequence[ScenarioResult]`` whose results live in an unlinked temporary file, one
pickle each; memory holds two integers a result (where it starts, its place in the run's order). Every read
unpickles a fresh copy, so a reader holds only the results it is looking at. Results may arrive out of order
(the side process, isolated plug-in systems): each is added with its scenario's place, and reads follow the
places (results of one place in the order they were added)."""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import tempfile
import weakref
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any, overload

from harness.errors import SPOOL, naming
from harness.replay._records import ScenarioResult


class ResultSpool(Sequence[ScenarioResult]):
    def __init__(self, results: Iterable[ScenarioResult] = ()) -> None:
        self._file = SpoolFile("memharness-results-", ".pickle")
        self.path = self._file.path
        self._closer = weakref.finalize(self, spool_close, self._file)  # a run that fails early closes it when dropped
        self._at: array[int] = array("q")
        self._place: array[int] = array("q")
        self._order: array[int] | None = array("q")
        self._end = 0
        self.next_place = 0
        """One past the largest place added so far: where another suite's results begin."""
        self.add(results)

    def add(self, results: Iterable[ScenarioResult], place: int | None = None) -> None:
        """Append ``results``; ``place``: their scenario's position in the run (default: after everything so far)."""
        self._file.seek(self._end)
        for result in results:
            blob = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
            self._file.write(blob)
            if self._order is not None and (place is None or place >= self.next_place - 1):
                self._order.append(len(self._at))  # after every place so far: the order holds without a sort
            else:
                self._order = None
            self._at.append(self._end)
            self._place.append(self.next_place if place is None else place)
            self.next_place = max(self.next_place, self._place[-1] + 1)
            self._end += len(blob)
        self._file.flush()  # on disk at once: the readers read by position only (a forked report writer too)

    def _ordered(self) -> array[int]:
        if self._order is None:
            self._order = array("q", sorted(range(len(self._at)), key=self._place.__getitem__))  # stable
        return self._order

    def _read(self, i: int) -> ScenarioResult:
        end = self._at[i + 1] if i + 1 < len(self._at) else self._end  # the pickles lie back to back
        with self._file._named():  # read where it lies (add flushed it): no seek, no buffer, no shared offset moved
            blob = os.pread(self._file.fileno(), end - self._at[i], self._at[i])
        result: ScenarioResult = pickle.loads(blob)
        return result

    def __len__(self) -> int:
        return len(self._at)

    @overload
    def __getitem__(self, index: int) -> ScenarioResult: ...

    @overload
    def __getitem__(self, index: slice) -> list[ScenarioResult]: ...

    def __getitem__(self, index: int | slice) -> ScenarioResult | list[ScenarioResult]:
        return SpoolView(self, self._ordered())[index]

    def __iter__(self) -> Iterator[ScenarioResult]:
        return iter(SpoolView(self, self._ordered()))

    def view(self, key: Callable[[ScenarioResult], Any], keys: Sequence[Any] | None = None) -> SpoolView:
        """The results sorted by ``key`` (stable), still read one at a time: only the keys are held. ``keys``:
        each result's key, in iteration order, when a pass made for more gathered them."""
        order = self._ordered()
        keys = [key(r) for r in self] if keys is None else keys
        return SpoolView(self, array("q", (order[j] for j in sorted(range(len(keys)), key=keys.__getitem__))))

    def close(self) -> None:
        self._closer()


class SpoolView(Sequence[ScenarioResult]):
    """Some of a spool's results in an order of their own (:meth:`ResultSpool.view`)."""

    def __init__(self, spool: ResultSpool, rows: array[int]) -> None:
        self._spool, self._rows = spool, rows

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, index: int) -> ScenarioResult: ...

    @overload
    def __getitem__(self, index: slice) -> list[ScenarioResult]: ...

    def __getitem__(self, index: int | slice) -> ScenarioResult | list[ScenarioResult]:
        if isinstance(index, slice):
            return [self._spool._read(i) for i in self._rows[index]]
        return self._spool._read(self._rows[index])

    def __iter__(self) -> Iterator[ScenarioResult]:
        for i in self._rows:
            yield self._spool._read(i)


def sorted_results(results: Sequence[ScenarioResult], key: Callable[[ScenarioResult], Any],
                   keys: Sequence[Any] | None = None) -> Sequence[ScenarioResult]:
    """``sorted(results, key=key)``, without reading a spool's results into memory; ``keys``: each result's key
    (in iteration order), gathered already."""
    if isinstance(results, ResultSpool):
        return results.view(key, keys)
    if keys is None:
        return sorted(results, key=key)
    return [results[j] for j in sorted(range(len(keys)), key=keys.__getitem__)]


def spool_close(handle: IO[bytes]) -> None:
    """Close a spool's file; what its buffer could not write is dropped (the spool is read only by the run, which
    has failed if a write was refused): a full ``TMPDIR`` was a traceback from the finalizer at exit."""
    with contextlib.suppress(OSError):
        handle.close()


class SpoolFile(io.BufferedRandom):
    """A run's spool: a temporary file unlinked at once (nothing is left behind whatever happens to the run: the
    open file is the spool) whose writes, seeks and flushes the OS refuses (a full ``TMPDIR``, a file-size limit)
    name it. They said "File too large", naming nothing; the file's name says where the run keeps its spools."""

    def __init__(self, prefix: str, suffix: str) -> None:
        fd, self.path = tempfile.mkstemp(prefix=prefix, suffix=suffix)
        super().__init__(io.FileIO(fd, "r+"))
        os.unlink(self.path)

    def write(self, data: Any) -> int:
        with self._named():
            return super().write(data)

    def flush(self) -> None:
        with self._named():
            super().flush()

    def seek(self, offset: int, whence: int = 0) -> int:
        with self._named():
            return super().seek(offset, whence)

    def _named(self) -> contextlib.AbstractContextManager[None]:
        return naming(self.path, SPOOL)

