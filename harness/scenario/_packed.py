"""A loaded scenario held as its pickle (compressed) until it is replayed (``memharness run``): a large suite's
scenarios are the largest thing a run holds (~6 KB each as objects, ~1.3 KB as a pickle, about half that
compressed), and each is needed whole only while it replays. The fields a run reads to plan itself (id, tags,
strategies, systems, design, variant, scripted replies, model faults) are kept beside the pickle; any other field
is read from a fresh copy.

The pickles of one load go to a :class:`Shelf`, a temporary file, so memory holds where each pickle is (~60
bytes), not the ~600-byte pickle (issue 34: a run's peak memory flat in its suite's size). A scenario packed where
no shelf is open (a ``--jobs`` worker parsing for the run, a process it was sent to) keeps its pickle in memory;
the run's process shelves the ones its workers send back."""

from __future__ import annotations

import contextlib
import errno
import os
import pickle
import tempfile
import threading
import weakref
import zlib
from collections.abc import Iterator
from typing import Any, cast

from harness.errors import SPOOL, naming
from harness.scenario._types import FaultStep, Scenario

_PLAN = ("id", "tags", "strategies", "systems", "design", "variant", "scripted_model")


class Shelf:
    """Packed scenarios' pickles in one temporary file, unlinked at once (nothing is left behind), written and read
    by offset (``pwrite`` / ``pread``: a forked process reads it too, sharing no file position). Closed when the
    last scenario on it is let go. A refused write (a full ``TMPDIR``) names the file."""

    def __init__(self) -> None:
        fd, self.path = tempfile.mkstemp(prefix="memharness-scenarios-", suffix=".pickle")
        os.unlink(self.path)
        self.fd, self.pid, self.end = fd, os.getpid(), 0
        self._lock = threading.Lock()  # a pool's results are unpickled (and shelved) on its own thread
        weakref.finalize(self, os.close, fd)

    def put(self, blob: bytes) -> int:
        with self._lock, self._named():
            at = self.end
            if os.pwrite(self.fd, blob, at) != len(blob):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            self.end = at + len(blob)
            return at

    def get(self, at: int, size: int) -> bytes:
        with self._named():
            blob = os.pread(self.fd, size, at)
        if len(blob) != size:
            raise OSError(errno.EIO, f"a packed scenario's pickle read back short ({len(blob)} of {size} bytes)",
                          self.path)
        return blob

    def _named(self) -> contextlib.AbstractContextManager[None]:
        return naming(self.path, SPOOL)


_OPEN: list[Shelf] = []
"""The shelf of the load under way in this process (:func:`shelving`), if any."""


@contextlib.contextmanager
def shelving() -> Iterator[Shelf]:
    """Scenarios packed (or sent back packed by a worker) in this process while this is open go to one new shelf."""
    shelf = Shelf()
    _OPEN.append(shelf)
    try:
        yield shelf
    finally:
        _OPEN.remove(shelf)


def _shelf() -> Shelf | None:
    shelf = _OPEN[-1] if _OPEN else None
    return shelf if shelf is not None and shelf.pid == os.getpid() else None  # a forked worker: not its file


class PackedScenario:
    """A :class:`Scenario` as its pickle and the fields that plan a run; :func:`unpacked` gives it back whole."""

    __slots__ = (*_PLAN, "model_faults", "_blob", "_shelf", "_size")

    def __init__(self, scenario: Scenario) -> None:
        for name in _PLAN:
            object.__setattr__(self, name, getattr(scenario, name))
        self.model_faults = any(isinstance(s, FaultStep) and s.model is not None for s in scenario.steps)
        self._keep(zlib.compress(pickle.dumps(scenario, protocol=pickle.HIGHEST_PROTOCOL), 1))  # ~0.45 of the pickle

    def _keep(self, blob: bytes) -> None:
        """On the open shelf when there is one (``_blob`` is then its offset), else in memory."""
        shelf = _shelf()
        self._shelf, self._size = shelf, len(blob)
        self._blob: bytes | int = blob if shelf is None else shelf.put(blob)

    def _pickle(self) -> bytes:
        blob = self._blob
        return blob if isinstance(blob, bytes) else cast(Shelf, self._shelf).get(blob, self._size)

    def unpack(self) -> Scenario:
        return cast(Scenario, pickle.loads(zlib.decompress(self._pickle())))

    def __getattr__(self, name: str) -> Any:  # a field not kept beside the pickle (a slot never misses here)
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.unpack(), name)

    def __reduce__(self) -> tuple[Any, ...]:  # the pickle itself travels, never the shelf
        return _restore, (tuple(getattr(self, n) for n in (*_PLAN, "model_faults")), self._pickle())


def _restore(state: tuple[Any, ...], blob: bytes) -> PackedScenario:
    packed = PackedScenario.__new__(PackedScenario)
    for name, value in zip((*_PLAN, "model_faults"), state, strict=True):
        object.__setattr__(packed, name, value)
    packed._keep(blob)
    return packed


def pack(scenario: Scenario) -> Scenario:
    """``scenario`` held as its pickle; it reads as a :class:`Scenario` (each field not kept beside the pickle from a
    fresh copy), and the replay takes it back whole (:func:`unpacked`)."""
    return cast(Scenario, PackedScenario(scenario))


def unpacked(scenario: Scenario) -> Scenario:
    """The whole scenario, whether ``scenario`` is one or was packed."""
    return scenario.unpack() if isinstance(scenario, PackedScenario) else scenario


def model_faults(scenario: Scenario) -> bool:
    """Whether a step of ``scenario`` faults the model, read beside the pickle when it is packed."""
    if isinstance(scenario, PackedScenario):
        return scenario.model_faults
    return any(isinstance(s, FaultStep) and s.model is not None for s in scenario.steps)
