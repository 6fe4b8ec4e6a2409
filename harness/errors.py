"""Harness errors: one root; ``ScenarioError`` carries a ``file:line: field: what was expected`` message."""

from __future__ import annotations

import contextlib
import math
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


def _escaped(char: str) -> str:
    """One character that is not printable, as the escape Python's ``repr`` would show for it."""
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte of a non-UTF-8 name, decoded with surrogateescape
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}" if char not in "\t\n\r" else char.encode("unicode_escape").decode("ascii")
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def one_line(text: str) -> str:
    """``text`` on one printable line (``str.isprintable``): control characters, line separators, lone surrogates (a
    non-UTF-8 file name decoded with ``surrogateescape``), format characters such as the bidirectional overrides,
    spaces other than ' ', unassigned and private-use code points are shown as escapes, so every error stays one
    line, printable, and shown in the order it is written (round 13: U+202E in a tag reversed the error line)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escaped(c) for c in text)


_JSON_TOKENS: Final = re.compile(r'"(?:[^"\\\n]|\\.)*"|[\[\]{}\n]')


def deepest_line(text: str) -> tuple[int, int]:
    """(line, depth): where the brackets of JSON ``text`` (outside strings) first reach their deepest nesting, for
    a parser's "nested too deeply" (round 13: that error named line 1, or no line, whatever the file)."""
    depth = deepest = 0
    line = where = 1
    for token in _JSON_TOKENS.finditer(text):
        char = token.group()[0]
        if char == "\n":
            line += 1
        elif char in "[{":
            depth += 1
            if depth > deepest:
                deepest, where = depth, line
        elif char in "]}":
            depth -= 1
    return where, deepest


def too_deep(path: object, text: str, what: str = "invalid JSON") -> str:
    """``path:line: what (nested too deeply: N levels, the deepest from this line)``: one located line."""
    line, depth = deepest_line(text)
    return f"{one_line(str(path))}:{line}: {what} (nested too deeply: {depth:,} levels, the deepest from this line)"


class Duplicate(ValueError):
    """A member written twice in one JSON object (``json`` keeps the last without a word)."""


def unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` refusing a member written twice (round 19: cassette-meta.json, summary.json, a run
    file's row and a benchmark file kept the last of two in silence; the cassette's lines refused it since round 14)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise Duplicate(key)
        out[key] = value
    return out


def json_trouble(exc: BaseException) -> str:
    """What ``json.loads`` met that is no ``JSONDecodeError``: nesting deeper than Python recurses, or an integer
    of more digits than ``int()`` converts (``ValueError``; round 16: an internal error in summary.json, the run
    files' rows, a benchmark file, cassette-meta.json and a LoCoMo file)."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if isinstance(exc, Duplicate):
        return f"member {one_line(str(exc))[:60]!r} twice in one object (JSON keeps the last without a word)"
    return f"a number of thousands of digits (at most {sys.get_int_max_str_digits() or 4300:,} are read)"


def unreadable_json(path: object, text: str, what: str, exc: BaseException) -> str:
    """``path:line: what (…)`` for :func:`json_trouble`: the line where the nesting is deepest, or of the long
    number."""
    if isinstance(exc, RecursionError):
        return too_deep(path, text, what)
    if isinstance(exc, Duplicate):  # the line of its second member, in the same object
        line, name = duplicate_member(text) or (1, str(exc))
        return f"{one_line(str(path))}:{line}: {what} ({json_trouble(Duplicate(name))})"
    return f"{one_line(str(path))}:{long_number_line(text)}: {what} ({json_trouble(exc)})"


_MEMBER_TOKENS: Final = re.compile(r'"(?:[^"\\\n]|\\.)*"(?:\s*:)?|[{}\n]')


def duplicate_member(text: str) -> tuple[int, str] | None:
    """(line, name) of the first member written twice in one object of JSON ``text``, or None. Round 20: the line
    was the second line anywhere holding ``"name":``, so in a file whose objects all hold the member (a LoCoMo
    turn's ``"speaker"``) it named another object's line, not the duplicate's."""
    import json

    line, objects = 1, list[set[str]]()
    for token in _MEMBER_TOKENS.finditer(text):
        got = token.group()
        if got == "{":
            objects.append(set())
        elif got == "}":
            if objects:
                objects.pop()
        elif got.endswith(":") and objects:  # a member's name (a string followed by ':'), not a string value
            name = json.loads(got[: got.rindex('"') + 1])
            if name in objects[-1]:
                return line, name
            objects[-1].add(name)
        line += got.count("\n")
    return None


def long_number_line(text: str) -> int:
    """The first line (counted at LF, as JSON and TOML count) holding a run of more digits than ``int()`` converts
    by default, else 1: where a parser's ``ValueError`` for such a number came from."""
    return next((n for n, row in enumerate(text.split("\n"), 1) if re.search(r"\d{4000}", row)), 1)


class HarnessError(Exception):
    """Root of every error the harness raises on purpose (the CLI prints it as one line, exit 2)."""


class ScenarioError(HarnessError, ValueError):
    """A scenario file is malformed; the message names the file, line and field."""


SYSTEM_FAILED: Final = "the system under test failed"
"""How every ``SystemFailure`` message starts (the system's failure, told apart from the harness's own errors)."""


class SystemFailure(HarnessError):
    """The system under test raised, exited, hung past the per-operation timeout or answered with the wrong type:
    its scenario run fails at the step that made the call, and the verdict says the system failed."""


USER_INTERRUPT: Final = threading.Event()
"""Set when SIGINT arrives (after :func:`watch_interrupts`): a ``KeyboardInterrupt`` while it is clear was raised by
the system under test itself, which is that system's failure, not a Ctrl-C that stops the run."""


INTERRUPTS_WATCHED: Final = threading.Event()
"""Set once :func:`watch_interrupts` is installed: without it a ``KeyboardInterrupt`` may be the user's (a library
caller, the pytest plugin), so it is never taken for the system's."""


TERMINATED: Final = threading.Event()
"""Set when the interrupt was SIGTERM (a CI cancel, ``timeout``, ``kill``): exit 143 and 'terminated', not 130."""


def watch_interrupts() -> None:
    """Install the SIGINT and SIGTERM handlers that set ``USER_INTERRUPT`` before raising ``KeyboardInterrupt`` as
    Python's does for SIGINT: a terminated run cleans up as an interrupted one does (no staged directory left)."""
    def on_signal(signum: int, frame: Any) -> None:
        USER_INTERRUPT.set()
        if signum == signal.SIGTERM:
            TERMINATED.set()
        raise KeyboardInterrupt

    USER_INTERRUPT.clear()  # a command run in the same process after an interrupted one starts afresh
    TERMINATED.clear()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGTERM, on_signal)
        INTERRUPTS_WATCHED.set()


def stop_if_asked() -> None:
    """Raise ``KeyboardInterrupt`` when Ctrl-C or SIGTERM has arrived: the handler's own exception can be lost where
    it lands (seen inside numpy's import, in an extension module's initialisation: the run went on and exited 0), so
    the run checks again between scenarios and before it writes anything."""
    if USER_INTERRUPT.is_set():
        raise KeyboardInterrupt


def interrupted() -> int:
    """Say how the run was stopped, in one line, and return its exit code: 143 for SIGTERM (the shell's 128 + 15,
    as if the default handler had ended the process), 130 for Ctrl-C."""
    import sys

    print("memharness: terminated" if TERMINATED.is_set() else "memharness: interrupted", file=sys.stderr)
    return 143 if TERMINATED.is_set() else 130


def child_signals(*, pool: bool = False) -> None:
    """In a process the run forked: Ctrl-C is the run's to handle (ignored here: no second traceback). SIGTERM
    ends a side process or a plug-in system's child as its default action does (not as the run's 'terminated'
    handler it inherited); a ``pool`` worker ignores it too and is ended by the run's process, which stops handing
    out work and waits for the task at hand — a worker killed under a pool that is cancelling its futures makes
    Python 3.11's executor print an InvalidStateError traceback from its own thread."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN if pool else signal.SIG_DFL)
    for unused in (signal.SIGUSR1, signal.SIGUSR2):  # the command ignores them (cli.entry); a system gets its own
        signal.signal(unused, signal.SIG_DFL)
    if pool:
        die_with_parent()


def die_with_parent() -> None:
    """Linux: this process gets SIGKILL when the process that forked it ends, however it ends (a SIGKILLed run
    left its ``--jobs`` workers alive for good, holding the caller's stderr pipe open). Elsewhere: nothing."""
    import ctypes
    import os

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent ended before the call: nobody will send the signal now
        os._exit(1)


class ScenarioInputError(HarnessError, ValueError):
    """Raised by a system for input a scenario gave it that it refuses (an unknown option, a bad seed field): the
    scenario run is an error naming the step (exit 2), never counted as the system's failure."""


class GateFileError(HarnessError, ValueError):
    """A gates file is malformed."""


def __getattr__(name: str) -> Any:
    """``CassetteMiss`` is built on first use: it subclasses the core's ``ReplayAborted``, and importing the core
    here would make every ``memharness`` start (``--help`` included) pay for all of ``memory_core``."""
    if name != "CassetteMiss":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from memory_core.errors import ReplayAborted

    class CassetteMiss(HarnessError, ReplayAborted):
        """Replay met a model call that no cassette entry answers: the scenario errors (the run is INCOMPLETE); the
        core never answers it with its heuristic fallback (``ReplayAborted``)."""

    CassetteMiss.__module__, CassetteMiss.__qualname__ = __name__, "CassetteMiss"  # pickles by name (--jobs)
    globals()["CassetteMiss"] = CassetteMiss
    return CassetteMiss


SPOOL: Final = " (a run's spool: TMPDIR names where it goes)"
"""What :func:`naming` adds for a run's spools (unlinked temporary files: their names alone say little)."""


@contextlib.contextmanager
def naming(path: Path | str, why: str = "") -> Iterator[None]:
    """An ``OSError`` that names no file (a ``write()`` on a full disk: ENOSPC, EDQUOT; EMFILE) names ``path``, and
    ``why`` after its reason: the CLI's one line then says which output could not be written."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None:
            raise OSError(exc.errno, (exc.strerror or str(exc)) + why, str(path)) from exc
        raise


def unwritable(path: Path, *, replaced: bool = False) -> Path | None:
    """What stops appending to file ``path``: the file itself when it exists and is not writable, else the nearest
    existing directory above it when that cannot be written into (or is no directory); None when nothing does.
    ``replaced``: the file is replaced (a temp file beside it, then a rename): only the directory counts."""
    probe = path.parent if replaced else path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if probe == path:
        return None if os.access(probe, os.W_OK) else probe
    return None if probe.is_dir() and os.access(probe, os.W_OK | os.X_OK) else probe


PLUGIN_TIMEOUT_S: float = 60.0
"""How long one call into a plugin (a metric on one probe, a ranker on one query) may take (docs/plugins.md)."""


class _PluginLate(BaseException):
    """Raised into a plugin's call when its time is up (not an ``Exception``: its own ``except Exception`` lets it
    through)."""


def call_plugin(what: str, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``; an exception (``SystemExit`` too: a plugin's ``sys.exit`` ended the run with no output) is
    one ``HarnessError`` line naming ``what``, even when the exception's own ``str`` raises; so is a call that
    outlives ``PLUGIN_TIMEOUT_S`` (round 13: a metric or ranker that hung held the run forever; SIGALRM, in the main
    thread, within whatever deadline encloses it: a system operation's, which fires as its own)."""
    seconds = PLUGIN_TIMEOUT_S
    armed = seconds > 0 and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    late = f"{what} failed: it did not return within {seconds:g} s (a plugin call's time limit)"  # built if raised
    outer = 0.0
    previous: Any = None

    def expire(signum: int, frame: Any) -> None:
        raise _PluginLate(signum, frame)

    if armed:
        previous = signal.signal(signal.SIGALRM, expire)
        outer = signal.setitimer(signal.ITIMER_REAL, 0)[0]  # what is left of an enclosing deadline (0: none)
        signal.setitimer(signal.ITIMER_REAL, min(seconds, outer) if outer else seconds)
    began = time.monotonic()
    try:
        value = fn(*args)
    except _PluginLate as exc:
        if outer and outer <= seconds:  # the enclosing deadline is the one that ran out: its handler raises its
            outer = 0.0  # own error (a system operation's timeout), once, and is not re-armed
            signal.signal(signal.SIGALRM, previous)
            if callable(previous):
                previous(*exc.args)
        raise HarnessError(late) from None
    except (Exception, SystemExit) as exc:
        raise HarnessError(f"{what} failed: {type(exc).__name__}: {shown(exc)}") from None
    finally:
        spent = time.monotonic() - began
        if armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            if outer:  # the enclosing deadline goes on with what is left (or fires now)
                signal.setitimer(signal.ITIMER_REAL, max(outer - spent, 1e-6))
    if seconds > 0 and spent > seconds:  # the alarm was swallowed (a bare except) or could not be armed
        raise HarnessError(late)
    return value


def plain_number(value: object) -> float | None:
    """A plugin's number as a plain finite float, read without calling its own methods (a subclass whose
    ``__float__`` raised, or an int too large for a float, was an internal error, round 12); None when it is no
    finite int or float below 2**53 in size (what a run file holds: harness/reporting/_typed.py; bool included,
    as a number)."""
    try:
        number = float.__float__(value) if isinstance(value, float) else int.__float__(value) \
            if isinstance(value, int) else None
    except OverflowError:
        return None
    return number if number is not None and math.isfinite(number) and abs(number) < 2.0 ** 53 else None


def shown(value: object, limit: int = 200) -> str:
    """``str(value)`` on one line, cut; a ``__str__`` that raises is said so."""
    try:
        return one_line(str(value))[:limit]
    except Exception as exc:
        return f"<{type(value).__name__} whose str() raised {type(exc).__name__}>"


# Round 20: the free text a run records from what the system under test said (a results row's ``failures`` and
# ``error``), as the run writes it and as ``report``, ``compare`` and ``merge`` accept it read back. A plug-in's
# error text (``RecallResult.error``) was written raw and read back unchecked: an ESC sequence, a NUL, U+2028 or
# U+202E reached the terminal and the report. Now the run writes each such character as its escape (``\x1b``: the
# text stays readable, nothing is lost) and a row read back holding one is refused; tab and LF are kept (an error
# may hold several lines).
SHOWN_REFUSED: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
"""C0 controls but tab and LF, DEL, C1 controls, line and paragraph separators, bidirectional embeddings, overrides
and isolates, lone surrogates."""


def shown_text(text: str) -> str:
    """``text`` with each character :data:`SHOWN_REFUSED` holds written as its escape (as ``one_line`` shows it)."""
    return SHOWN_REFUSED.sub(lambda m: one_line(m.group()), text) if SHOWN_REFUSED.search(text) else text


def text_problem(text: str) -> str | None:
    """``U+XXXX`` for the first character of ``text`` the rule refuses, else None."""
    return None if (m := SHOWN_REFUSED.search(text)) is None else f"U+{ord(m.group()):04X}"
