"""Argument types for the ``memharness`` parser: numbers with bounds, refused in one line; output directories."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from harness.errors import HarnessError, one_line
from harness.reporting._stored import trace_url_problem
from harness.scenario._envflag import FLAG_VARIABLES, parse_flag
from harness.scenario._envflag import expected as flag_expected


def bounded(convert: Callable[[str], float], ok: Callable[[float], bool], expected: str) -> Callable[[str], Any]:
    """An argparse type: ``convert`` the text, accept it when ``ok``; otherwise one line, "expected <what>"."""

    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not ok(value):  # a comparison with nan is False: nan and out-of-range values are refused alike
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    return parse


GIVEN = "_memharness_given"
"""The namespace attribute ``StoreOnce`` keeps the options already given in (dropped once parsing ends)."""


class StoreOnce(argparse._StoreAction):
    """argparse's ``store``, but an option given twice with two different values is refused in one line: the last
    one won in silence before (``--out a --out b`` wrote b, ``--strategy x --strategy ''`` ran the default
    strategies; round 15b). The same value twice is the same request and is taken."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if self.option_strings and self.nargs is None and isinstance(values, list):  # `--out=--`: argparse drops
            # the '--' and stores [] past the type (round 15b: an internal error, or the default strategies in silence)
            raise argparse.ArgumentError(self, "expected one argument, got '--' (read as the end of the options)")
        given = vars(namespace).setdefault(GIVEN, {})
        if self.dest in given and given[self.dest] != values:
            raise argparse.ArgumentError(self, f"given twice, {str(given[self.dest])!r} then {str(values)!r}; give it once")
        given[self.dest] = values
        super().__call__(parser, namespace, values, option_string)


def names(text: str) -> str:
    """A comma-separated list of names (``--strategy``, ``--tag``) holding at least one name. Before round 15b an
    empty ``--strategy ''`` (or ``,``) ran the default strategies without a word."""
    if not any(part.strip() for part in text.split(",")):
        raise argparse.ArgumentTypeError(f"expected a name or comma-separated names, got {text!r}")
    return text


def text_line(text: str) -> str:
    """A name or URL the run writes into its outputs (``--model``, ``--api-base``, ``--set``): one printable line,
    not blank. Round 19: an ESC, a NUL or a line separator in ``--model`` reached summary.md raw and made junit.xml
    ill-formed XML (every scenario's "stale: … this run asks <model>")."""
    if problem := text_line_problem(text):
        raise argparse.ArgumentTypeError(f"{problem}, got {one_line(repr(text))[:60]}")
    return text


def text_line_problem(text: str) -> str | None:
    """Why ``text`` is not one printable line that is not blank (``str.isprintable``: no control character, line
    separator, format character, lone surrogate), or ``None``."""
    if not text.strip():
        return "expected a name, got nothing (blank)"
    if not text.isprintable():
        bad = next(c for c in text if not c.isprintable())
        return f"expected one printable line (it holds {one_line(bad)})"
    return None


def http_url(text: str) -> str:
    """An ``http(s)://`` URL with a host, one printable word (``github comment --api``, ``--report-url``); empty: none
    given (a workflow's ``--report-url "$URL"`` of an unset variable)."""
    from harness.tools._urls import http_url_problem

    if text and (problem := http_url_problem(text)):
        raise argparse.ArgumentTypeError(f"{problem}, got {one_line(repr(text))[:60]}")
    return text


def owner_repo(text: str) -> str:
    """GitHub's ``OWNER/REPO`` (``github comment --repo``); empty: none given, as :func:`http_url`."""
    from harness.tools._urls import repo_problem

    if text and (problem := repo_problem(text)):
        raise argparse.ArgumentTypeError(f"{problem}, got {one_line(repr(text))[:60]}")
    return text


def path(text: str) -> Any:
    """An argparse type for a path: ``pathlib.Path``, imported at the first use so ``--help`` never pays for it.
    A path that is (or lies below) a symbolic-link loop is refused here, for every path argument at once: each
    command resolves its paths somewhere (the run directory's stage, the history beside it), where the loop was
    an internal error (``RuntimeError``) after the work was done (round 13)."""
    import errno
    from pathlib import Path

    try:
        Path(text).resolve()
    except RuntimeError:  # Python < 3.13 says a loop so
        raise argparse.ArgumentTypeError(f"{text!r} is a symbolic-link loop") from None
    except OSError as exc:  # Python >= 3.13 says it as ELOOP
        if exc.errno == errno.ELOOP:
            raise argparse.ArgumentTypeError(f"{text!r} is a symbolic-link loop") from None
    except ValueError:  # a NUL, a lone surrogate: not this check's to say; the command names the path as before
        pass
    return Path(text)


def file_path(text: str) -> Any:
    """:func:`path` for a file to write: ``x/`` names a directory, so it is refused (``Path`` would drop the slash
    and the file would be written at ``x``)."""
    if text.endswith(("/", os.sep)):
        raise argparse.ArgumentTypeError(f"expected a file, got {text!r} (a directory: it ends in '/')")
    return path(text)


def check_output_dir(path: object, option: str) -> None:
    """Fail fast, before any work, when an output directory cannot be one (a file, or below a file, unwritable)."""
    if not isinstance(path, Path):
        return
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise HarnessError(f"{one_line(str(path))}: {option}: {one_line(str(probe))} is not a directory")
    if probe.is_dir() and not os.access(probe, os.W_OK | os.X_OK):
        raise HarnessError(f"{one_line(str(path))}: {option}: {one_line(str(probe))} is not writable")


ENV_PREFIXES = ("MEMHARNESS_", "OTEL_", "GITHUB_")
"""The variables the harness (and the OpenTelemetry SDK it configures) reads: checked before any work."""


def check_environment(environ: Mapping[str, str]) -> None:
    """Refuse, in one line naming the variable and before any work, a value the run would trip over later (after a
    whole replay, as an internal error) or silently ignore: bytes that are not UTF-8 in any variable the harness
    reads, an OpenTelemetry SDK limit (``OTEL_*_LIMIT``) that is not a non-negative integer, an
    ``OTEL_SDK_DISABLED`` that is not true or false, a ``MEMHARNESS_OP_TIMEOUT`` that is not seconds, a
    ``MEMHARNESS_RUN_ID`` that is not one printable word, a ``MEMHARNESS_TRACE_URL`` that is not an http(s) URL
    template with ``{trace_id}`` (``trace_url_problem``), an on/off variable (``MEMHARNESS_DEBUG``:
    ``harness.scenario._envflag``) that is neither, an ``OTEL_RESOURCE_ATTRIBUTES`` or OTLP headers value that is not
    ``key=value`` pairs (``harness.scenario._otel_env``)."""
    for name, value in environ.items():
        if not name.startswith(ENV_PREFIXES):
            continue
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise HarnessError(f"environment variable {one_line(name)}: not valid UTF-8") from None
        if name.startswith("OTEL_") and name.endswith("_LIMIT") and value.strip():
            try:
                ok = int(value) >= 0
            except ValueError:
                ok = False
            if not ok:
                raise HarnessError(f"environment variable {name}: expected a non-negative integer, got "
                                   f"{one_line(repr(value))[:60]}")
        if name == "MEMHARNESS_OP_TIMEOUT" and value.strip():
            try:
                seconds = float(value)
            except ValueError:
                seconds = math.nan
            if not 0 <= seconds < 1e7:
                raise HarnessError(f"environment variable {name}: expected seconds (a number from 0 to 10,000,000; "
                                   f"0: no timeout), got {one_line(repr(value))[:60]}")
        if name == "OTEL_SDK_DISABLED" and value.strip() and value.strip().lower() not in ("true", "false"):
            # the specification reads any other value as false, "SHOULD" with a warning: it was read as false in
            # silence (round 15b), a run with spans its user meant to turn off
            raise HarnessError(f"environment variable {name}: expected true or false (empty: unset), got "
                               f"{one_line(repr(value))[:60]}")
        if name in FLAG_VARIABLES and parse_flag(value, name) is None:
            raise HarnessError(f"environment variable {name}: {flag_expected(name)}, got {one_line(repr(value))[:60]}")
        if name == "MEMHARNESS_TRACE_URL" and value.strip() and (problem := trace_url_problem(value.strip())):
            raise HarnessError(f"environment variable {name}: {problem}, got {one_line(repr(value))[:60]}")
        if name == "MEMHARNESS_MODEL" and value.strip() and (problem := text_line_problem(value)):
            raise HarnessError(f"environment variable {name}: {problem}, got {one_line(repr(value))[:60]}")
        if name == "MEMHARNESS_RUN_ID" and value and not (len(value) <= 128 and value.isprintable()
                                                          and not any(c.isspace() for c in value)):
            raise HarnessError(f"environment variable {name}: expected one printable word of at most 128 "
                               f"characters, got {one_line(repr(value))[:60]}")
    from harness.scenario._otel_env import check_pairs  # after the loop: a value that is not UTF-8 is said as such first

    try:  # fix (round 12): a malformed pair was the SDK's unlocated warning, or a header silently dropped
        check_pairs(environ)
    except ValueError as exc:
        raise HarnessError(f"environment variable {one_line(str(exc))}") from None


def unused_model_flags(args: argparse.Namespace) -> str:
    """The note for model options given to a run that calls no model (empty when none was given)."""
    given = [f"--{name.replace('_', '-')}" for name in ("model", "api_base", "record", "live") if getattr(args, name, None)]
    if not given:
        return ""
    return (f"note: {', '.join(given)} unused: no scenario run selected calls a model (strategy model, or a system "
            "behind the model proxy)")
