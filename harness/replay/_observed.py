"""The system as the replay reads it: its record list fetched once per store state the harness can tell apart."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, Final

from harness.errors import SYSTEM_FAILED, HarnessError, SystemFailure
from harness.system import DreamResult, ExtractResult, ForgetResult, MemoryRecord, RecallResult
from memory_core.errors import ReplayAborted

READS: Final = frozenset({"documents", "index_text", "loaded_index", "stray_files", "lock_held", "system_check",
                          "topic_docs"})
"""Methods that only look: calling them keeps the cached records."""
RESULT_TYPES: Final = {"recall": RecallResult, "extract": ExtractResult, "dream": DreamResult, "forget": ForgetResult}
"""What each operation must return (docs/system-protocol.md); another type is the system's failure."""
OP_TIMEOUT_ENV: Final = "MEMHARNESS_OP_TIMEOUT"
DEFAULT_OP_TIMEOUT_S: Final = 120.0
"""Seconds one call into the system under test may take (times a model's timeout scale); 0 turns it off."""


def op_timeout(model: Any = None, environ: Any = None) -> float:
    """The per-operation timeout: ``$MEMHARNESS_OP_TIMEOUT`` seconds, else 120 s times the model's timeout scale."""
    raw = (os.environ if environ is None else environ).get(OP_TIMEOUT_ENV, "")
    scale: Any = getattr(model, "timeout_scale", None) or getattr(getattr(model, "inner", None), "timeout_scale", 1.0)
    try:  # the scale of the model itself, or of the live model a recording cassette wraps (record, --live)
        value = float(raw) if raw.strip() else DEFAULT_OP_TIMEOUT_S * max(1.0, float(scale))
    except (TypeError, ValueError):
        value = DEFAULT_OP_TIMEOUT_S
    return value if value == value and 0 <= value < 1e7 else DEFAULT_OP_TIMEOUT_S


@contextlib.contextmanager
def _contained(name: str, seconds: float) -> Iterator[None]:
    """One call into the system under test: its stdout goes to stderr (the harness's own output stays whole), a
    call that outlives ``seconds`` is interrupted (SIGALRM; the main thread only), and whatever it raises or exits
    with becomes a ``SystemFailure`` naming the call. The harness's own aborts (a cassette miss) pass through."""
    armed = seconds > 0 and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()

    def expire(signum: int, frame: Any) -> None:
        raise SystemFailure(f"{SYSTEM_FAILED}: {name}() did not return within {seconds:g} s (the per-operation "
                            f"timeout, ${OP_TIMEOUT_ENV})")
    previous = signal.signal(signal.SIGALRM, expire) if armed else None
    if armed:
        signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    except (HarnessError, ReplayAborted, KeyboardInterrupt):
        raise
    except BaseException as exc:  # SystemExit and GeneratorExit included: the run goes on and writes every output
        raise SystemFailure(f"{SYSTEM_FAILED}: {name}() raised {type(exc).__name__}: {exc}") from None
    finally:
        if armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


class Observed:
    """Wraps a ``MemorySystem``. ``documents()`` is asked once and reused until the harness calls anything else on
    the system (an operation, a seed, a lock, a fault), which may change the store and so drops the cached list,
    or the next step begins (``refresh``: what a system reports may depend on its clock).

    A check step asks for the records four or five times (coverage, entry counts, files, store shape); without
    this each ask re-listed the whole store."""

    __slots__ = ("_docs", "_system", "_timeout")

    def __init__(self, system: Any, timeout: float = 0.0) -> None:
        self._system, self._timeout = system, timeout
        self._docs: list[MemoryRecord] | None = None

    @property
    def timeout(self) -> float:
        """Seconds one call into the system may take (0: no limit)."""
        return self._timeout

    @property
    def inner(self) -> Any:
        return self._system

    def refresh(self) -> None:
        """Drop the cached records (the replay calls this at every step: a clock advance changes no call)."""
        self._docs = None

    def documents(self) -> list[MemoryRecord]:
        if self._docs is None:
            with _contained("documents", self._timeout):
                self._docs = list(self._system.documents())
        return self._docs

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._system, name)
        if not callable(value):
            return value
        return self._reading(name, value) if name in READS else self._changing(name, value)

    def _reading(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            with _contained(name, self._timeout):
                return method(*args, **kwargs)
        return call

    def _changing(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        expected = RESULT_TYPES.get(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            self._docs = None
            try:
                with _contained(name, self._timeout):
                    result = method(*args, **kwargs)
            finally:
                self._docs = None
            if expected is not None and not isinstance(result, expected):
                raise SystemFailure(f"{SYSTEM_FAILED}: {name}() returned {type(result).__name__}, expected "
                                    f"{expected.__name__} (docs/system-protocol.md)")
            return result
        return call


def close_system(observed: Observed) -> list[str]:
    """Call the observed system's ``close()`` if it has one, contained like every other call: its failure, if any."""
    close = getattr(observed.inner, "close", None)
    if not callable(close):
        return []
    try:
        with _contained("close", observed.timeout):
            close()
    except SystemFailure as exc:
        return [str(exc)]
    return []
