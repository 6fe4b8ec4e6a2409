"""The system as the replay reads it: its record list fetched once per store state the harness can tell apart."""

from __future__ import annotations

import contextlib
import copy
import inspect
import itertools
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Final

from harness.errors import (
    INTERRUPTS_WATCHED,
    SYSTEM_FAILED,
    USER_INTERRUPT,
    HarnessError,
    ScenarioInputError,
    SystemFailure,
    one_line,
)
from harness.replay._proxy import PROXY_URL_ENV as _PROXY_URL
from harness.replay._shapes import MAX_RESULT_ITEMS, checked_records, checked_result, plain
from harness.system import Capability, DreamResult, ExtractResult, ForgetResult, MemoryRecord, RecallResult, capabilities_of
from memory_core.errors import ReplayAborted

READS: Final = frozenset({"documents", "index_text", "loaded_index", "stray_files", "lock_held", "system_check",
                          "topic_docs"})
"""Methods that only look: calling them keeps the cached records."""
READ_TYPES: Final[dict[str, tuple[type, ...]]] = {"index_text": (str,), "loaded_index": (str,), "lock_held": (bool,),
                                                  "system_check": (str, type(None)), "stray_files": (list, tuple)}
"""What each read the harness makes must return (docs/system-protocol.md): ``stray_files`` a list of text. Round 14b:
an ``index_text()`` answering a list (or a generator) crashed the check step with ``AttributeError`` (INCOMPLETE,
blamed on the harness) and a ``str`` subclass ran the system's ``__str__`` outside any call's timeout."""
RESULT_TYPES: Final = {"recall": RecallResult, "extract": ExtractResult, "dream": DreamResult, "forget": ForgetResult}
"""What each operation must return (docs/system-protocol.md); another type is the system's failure."""
RETURN_NOTHING: Final = frozenset({"seed", "finish_seeding", "add_turns", "close"})
"""Calls whose answer the protocol does not read: anything but None is the system's failure (round 17: an ``async def
seed`` returned a coroutine nobody awaited, so the memory was never stored and the run went on without a word)."""
OP_TIMEOUT_ENV: Final = "MEMHARNESS_OP_TIMEOUT"
DEFAULT_OP_TIMEOUT_S: Final = 120.0
"""Seconds one call into the system under test may take (times a model's timeout scale); 0 turns it off."""
MESSAGE_CHARS: Final = 500
"""How much of what a system raised a failure quotes (one line)."""
SPENT: Final = [0.0]
"""Seconds spent inside calls into the system under test since the replay began (``replay`` resets and reads it)."""
WATCH: Callable[[str | None, float], None] | None = None
"""Told the name and timeout of each call into the system as it starts (and None as it ends): the watchdog of an
isolated replay (``_isolated``), which kills a process whose call outlives its timeout however it hangs."""
def describe(exc: BaseException) -> str:
    """``Type: message`` of what a system raised, on one line and at most ``MESSAGE_CHARS`` long, even when its
    ``__str__`` itself raises or never ends (a hostile exception)."""
    try:
        text = str(exc)
    except BaseException:  # a __str__ that raises: the type is all there is to say
        text = "<its message could not be read>"
    text, name = one_line(text[:MESSAGE_CHARS + 1]), one_line(_TYPE_NAME.__get__(type(exc), type)[:200])[:200]
    if len(text) > MESSAGE_CHARS:
        text = text[:MESSAGE_CHARS] + " …"
    return f"{name}: {text}" if text else name


_TYPE_NAME: Final = type.__dict__["__name__"]
"""The class name as the interpreter holds it: a metaclass whose ``__name__`` property raises cannot hide it (round
18: that raise escaped ``describe`` and the run was INCOMPLETE, blamed on the scenario), capped like the message."""


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
    began = time.perf_counter()
    try:
        if WATCH is not None:
            WATCH(name, seconds)
        with contextlib.redirect_stdout(sys.stderr):
            yield
        if seconds > 0 and (late := time.perf_counter() - began) > seconds:  # the signal was blocked or ignored
            raise SystemFailure(f"{SYSTEM_FAILED}: {name}() did not return within {seconds:g} s (it returned after "
                                f"{late:.3g} s; the per-operation timeout, ${OP_TIMEOUT_ENV})")
    except (HarnessError, ReplayAborted) as exc:
        if isinstance(exc, ScenarioInputError | SystemFailure | ReplayAborted) or _harness_raised(exc):
            raise  # the harness's own abort, or the scenario input the system refuses: not the system's failure
        raise SystemFailure(f"{SYSTEM_FAILED}: {name}() raised {describe(exc)}") from None
    except KeyboardInterrupt as exc:
        if USER_INTERRUPT.is_set() or not INTERRUPTS_WATCHED.is_set():  # Ctrl-C (or no way to tell): it stops
            raise
        raise SystemFailure(f"{SYSTEM_FAILED}: {name}() raised {describe(exc)}") from None
    except BaseException as exc:  # SystemExit and GeneratorExit included: the run goes on and writes every output
        hint = (f" (a system behind the model proxy reads ${_PROXY_URL}: its factory says so with model_proxy = True)"
                if isinstance(exc, KeyError) and exc.args == (_PROXY_URL,) else "")
        raise SystemFailure(f"{SYSTEM_FAILED}: {name}() raised {describe(exc)}{hint}") from None
    finally:
        SPENT[0] += time.perf_counter() - began
        if WATCH is not None:
            WATCH(None, 0.0)
        if armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


def _harness_raised(exc: BaseException) -> bool:
    """Whether ``exc`` was raised in the harness's or the core's own code (a cassette, the model it handed the
    system), not by the system itself: a ``HarnessError`` a plug-in raises is its failure like any other exception
    (round 18: it made the run INCOMPLETE, exit 2, blamed on the scenario)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is None or tb.tb_frame.f_code.co_filename.startswith(_OWN_CODE)


_OWN_CODE: Final = tuple(os.path.dirname(os.path.abspath(path)) + os.sep for path in (
    os.path.dirname(__file__), sys.modules[ReplayAborted.__module__].__file__ or "/"))
"""The harness's and the core's source directories."""


def open_system(build: Callable[[], Any], timeout: float) -> tuple[Any, frozenset[Capability], bool]:
    """(system, its capabilities, False), the factory's call contained like every other call; when the factory or
    the capabilities it declares fail, (a stand-in whose every call fails with that message, every capability,
    True): the replay then fails at its first call into the system instead of skipping or erroring."""
    try:
        with _contained("factory", timeout):
            system = build()
        with _contained("capabilities", timeout):  # a property that raises, hangs or names no capability
            return system, capabilities_of(system), False
    except SystemFailure as exc:
        return _Unbuilt(str(exc)), frozenset(Capability), True


class _Unbuilt:
    """A system its factory could not build: every call fails with the factory's failure."""

    def __init__(self, failure: str) -> None:
        self.failure = failure

    def close(self) -> None:
        return None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in _DECLARED:
            raise AttributeError(name)  # declares nothing: the defaults apply

        def fail(*args: Any, **kwargs: Any) -> Any:
            raise SystemFailure(self.failure)
        return fail


_MISSING: Final = object()
CORE_METHODS: Final = frozenset({"seed", "finish_seeding", "add_turns", "extract", "dream", "recall", "forget",
                                 "documents"})
"""The portable operations every ``MemorySystem`` has (``harness.system.MemorySystem``)."""
_DECLARED: Final = frozenset({"name", "design", "variant", "strategies", "recall_limit", "capabilities", "model_proxy"})


class Observed:
    """Wraps a ``MemorySystem``. ``documents()`` is asked once and reused until the harness calls anything else on
    the system (an operation, a seed, a lock, a fault), which may change the store and so drops the cached list,
    or the next step begins (``refresh``: what a system reports may depend on its clock).

    A check step asks for the records four or five times (coverage, entry counts, files, store shape); without
    this each ask re-listed the whole store."""

    __slots__ = ("_copies", "_docs", "_system", "_timeout")

    def __init__(self, system: Any, timeout: float = 0.0) -> None:
        self._system, self._timeout = system, timeout
        self._docs: list[MemoryRecord] | None = None
        self._copies = not type(system).__module__.startswith(("harness.", "memory_core."))  # a shipped system's
        # own code changes no argument: the copies (COPIED_ARGUMENTS) are for plug-ins

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
                self._docs = checked_records(self._system.documents())
        return self._docs

    def __getattr__(self, name: str) -> Any:
        with _contained(name, self._timeout):  # a property is the system's code too: it may raise or hang
            value = getattr(self._system, name, _MISSING)
        if value is _MISSING and name in CORE_METHODS:  # every system has these: the system is not one
            raise SystemFailure(f"{SYSTEM_FAILED}: it has no {name}() (its factory returned "
                                f"{type(self._system).__name__}; every system implements the portable operations, "
                                "docs/system-protocol.md)")
        if value is _MISSING:
            raise AttributeError(name)
        if not callable(value):
            return value
        return self._reading(name, value) if name in READS else self._changing(name, value)

    def _reading(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            with _contained(name, self._timeout):  # its answer is checked and copied in here: its own methods are
                return _checked_read(name, method(*args, **kwargs))  # the system's code, timed like the call
        return call

    def _changing(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        expected = RESULT_TYPES.get(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            self._docs = None
            if self._copies and name in COPIED_ARGUMENTS:  # round 18: a seed field it changed reached the next strategy's run
                args, kwargs = copy.deepcopy((args, kwargs))
            try:
                with _contained(name, self._timeout):  # its answer is read in here too: a value whose own methods
                    result = method(*args, **kwargs)  # raise or hang (a str subclass's __hash__) is the system's
                    if expected is not None and not isinstance(result, expected):
                        raise SystemFailure(wrong_return(name, result, expected.__name__))
                    if name in RETURN_NOTHING and result is not None:
                        raise SystemFailure(wrong_return(name, result, "None"))
                    return checked_result(name, result) if expected is not None else result
            finally:
                self._docs = None
        return call


COPIED_ARGUMENTS: Final = frozenset({"seed", "add_turns"})
"""Calls whose arguments the system gets as deep copies: the scenario's memories and turns are read again by the
next strategy's run in the same process, so what the system does to them (``memory.system["importance"] = 99``, a
tool call's ``input`` changed, ``object.__setattr__`` on the frozen memory) must stay in its call."""


def wrong_return(name: str, result: Any, expected: str) -> str:
    """The failure of a call that returned ``result`` where the protocol expects ``expected``; an awaitable (an
    ``async def`` method) is closed unrun, and said to be one: the protocol is synchronous, nothing awaits it."""
    if inspect.isawaitable(result):
        with contextlib.suppress(Exception):
            getattr(result, "close", lambda: None)()  # no "coroutine … was never awaited" warning later
        return (f"{SYSTEM_FAILED}: {name}() returned an awaitable ({type(result).__name__}), expected {expected}: an "
                "async method is never awaited, so it did nothing (the protocol's methods are synchronous, "
                "docs/system-protocol.md)")
    return f"{SYSTEM_FAILED}: {name}() returned {type(result).__name__}, expected {expected} (docs/system-protocol.md)"


def _checked_read(name: str, value: Any) -> Any:
    """A plain copy of what read ``name`` returned (``plain``: built-in types only), else the system's failure."""
    kinds = READ_TYPES.get(name)
    if kinds is None:
        return value
    wrong = not isinstance(value, kinds)
    if not wrong and name == "stray_files":
        value = list(itertools.islice(value, MAX_RESULT_ITEMS + 1))
        wrong = len(value) > MAX_RESULT_ITEMS or not all(isinstance(v, str) for v in value)
    if wrong:
        expected = " or ".join("None" if k is type(None) else k.__name__ for k in kinds)
        raise SystemFailure(wrong_return(name, value, f"a list of at most {MAX_RESULT_ITEMS:,} str"
                                         if name == "stray_files" else expected))
    return plain(value)


def close_system(observed: Observed) -> list[str]:
    """Call the observed system's ``close()`` if it has one, contained like every other call: its failure, if any."""
    close = getattr(observed.inner, "close", None)
    if not callable(close):
        return []
    try:
        with _contained("close", observed.timeout):
            if (result := close()) is not None:
                raise SystemFailure(wrong_return("close", result, "None"))
    except SystemFailure as exc:
        return [str(exc)]
    return []
