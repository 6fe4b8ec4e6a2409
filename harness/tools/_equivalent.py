"""Equivalent mutants, triaged by hand once: generated mutants that change no behaviour the spec defines.

A generated sample's kill rate is only meaningful without them (no scenario can kill a mutant that behaves like the
original), so ``memharness sensitivity`` leaves every mutant listed here out of the score, reports it with its reason,
and does not run it. An entry names the module and the exact changed line before and after (as ``sensitivity.json``
prints them), so it keeps matching when other code moves the line; the reason says why no observable behaviour can
differ. The shipped list for ``memory_core`` is ``equivalent_mutants.toml`` beside this module.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Final

from harness.errors import HarnessError
from harness.scenario._toml import key_line, table_array
from harness.tools._mutants import Mutant, read_toml

ANY_CHANGE: Final = "*"
"""``after = "*"``: every mutant of the line is equivalent — only for a line the shipped configuration never runs
(a branch only the seed mode takes), where the reason holds whatever the change."""
KEYS: Final = frozenset({"file", "before", "after", "reason", "operator", "within", "unreachable"})
UNREACHABLE: Final = "unreachable: "
"""How a left-out mutant's reason starts when it is not equivalent but no scenario can reach it (``unreachable =
true``: concurrency, files over the scenario size limit, OS errors, live-model-only settings): a gap of the
scenario language rather than an equivalence, reported apart from the equivalent ones."""
OUTSIDE_KEYS: Final = frozenset({"module", "reason", "within", "when"})


@dataclass(frozen=True, slots=True)
class Equivalent:
    file: str
    before: str
    after: str
    reason: str
    operator: str | None = None
    within: str | None = None
    """The function (or class) the line is in, where the same line occurs more than once in the module."""
    unreachable: bool = False
    """Not equivalent: the behaviour differs, but no scenario can reach it (see ``UNREACHABLE``)."""

    def matches(self, mutant: Mutant, enclosing: Callable[[Mutant], str] = lambda _m: "") -> bool:
        return (mutant.file == self.file and mutant.before == self.before and self.after in (mutant.after, ANY_CHANGE)
                and (self.operator is None or mutant.rule == f"cosmic-ray {self.operator}")
                and (self.within is None or enclosing(mutant) == self.within))


def enclosing_name(source: str, line: int) -> str:
    """The innermost ``def`` or ``class`` of ``source`` that contains ``line``, its decorators included ('' at
    module level)."""
    best, size = "", float("inf")
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or node.end_lineno is None:
            continue
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)])  # a decorator belongs to what it wraps
        if start <= line <= node.end_lineno and node.end_lineno - start < size:
            best, size = node.name, node.end_lineno - start
    return best


@dataclass(frozen=True, slots=True)
class Outside:
    """Modules left out of the sampled population (``[[outside]]``): code that is no part of the systems the suite
    replays (an optional strategy needing torch, the memory root's location, which the harness supplies)."""

    module: str
    """A glob over module paths relative to the target (``files/paths.py``, ``sqlite/*``)."""
    reason: str
    within: tuple[str, ...] = ()
    """Only these top-level functions or classes of the module (empty: the whole module)."""
    when: str | None = None
    """Only the branches the shipped configuration never takes of ``if`` statements whose test (or, for ``if not
    X``, whose X) matches this regex: the body of ``if X:``, the ``else`` of ``if not X:``."""

    @property
    def whole_module(self) -> bool:
        return not self.within and self.when is None

    def spans(self, source: str) -> list[tuple[int, int]]:
        """The line spans of ``source`` (a module this rule matches) that it leaves out; none for a whole module,
        which is never read."""
        if self.within:
            return outside_spans(source, self.within)
        return dead_branch_spans(source, self.when) if self.when is not None else []


@dataclass(frozen=True, slots=True)
class Triage:
    equivalents: tuple[Equivalent, ...] = ()
    outside: tuple[Outside, ...] = ()


def default_equivalents() -> Path:
    return Path(str(resources.files("harness.tools").joinpath("equivalent_mutants.toml")))


def load_equivalents(path: Path) -> list[Equivalent]:
    """The ``[[equivalent]]`` tables of a triage TOML."""
    return list(load_triage(path).equivalents)


def load_triage(path: Path) -> Triage:
    """Parse a triage TOML (``[[equivalent]]`` and ``[[outside]]`` tables); every error names the file and entry."""
    text, data = read_toml(path, "triage file")
    if unknown := sorted(set(data) - {"equivalent", "outside"}):
        raise HarnessError(f"{path}:{key_line(text, unknown[0])}: {unknown[0]}: expected only [[equivalent]] and "
                           "[[outside]] tables")
    out = []
    for i, (line, raw) in enumerate(table_array(path, text, data, "equivalent"), 1):
        where = f"{path}:{line}: equivalent {i}"
        if extra := set(raw) - KEYS:
            raise HarnessError(f"{where}: unknown key {sorted(extra)[0]!r}; expected {', '.join(sorted(KEYS))}")
        for key in ("file", "before", "after", "reason"):
            if not isinstance(raw.get(key), str) or not raw[key].strip():
                raise HarnessError(f"{where}: {key!r} must be non-empty text")
        for key in ("operator", "within"):
            if key in raw and not isinstance(raw[key], str):
                raise HarnessError(f"{where}: {key!r} must be text")
        if not isinstance(raw.get("unreachable", False), bool):
            raise HarnessError(f"{where}: 'unreachable' must be true or false")
        out.append(Equivalent(raw["file"], raw["before"], raw["after"], raw["reason"].strip(), raw.get("operator"),
                              raw.get("within"), raw.get("unreachable", False)))
    outside = []
    for i, (line, raw) in enumerate(table_array(path, text, data, "outside"), 1):
        where = f"{path}:{line}: outside {i}"
        within = raw.get("within", []) if isinstance(raw, dict) else None
        when = raw.get("when") if isinstance(raw, dict) else None
        if not isinstance(raw, dict) or not {"module", "reason"} <= set(raw) <= OUTSIDE_KEYS or not all(
                isinstance(raw[k], str) and raw[k].strip() for k in ("module", "reason")) or not isinstance(
                within, list) or not all(isinstance(w, str) and w.isidentifier() for w in within) or (
                when is not None and (not isinstance(when, str) or within)):
            raise HarnessError(f"{where}: expected non-empty text 'module' and 'reason', optionally 'within' (a list "
                               "of function or class names) or 'when' (a regex over if-tests), and nothing else")
        if when is not None:
            try:
                re.compile(when)
            except re.error as exc:
                raise HarnessError(f"{where}: 'when' is not a valid regex: {exc}") from None
        outside.append(Outside(raw["module"], raw["reason"].strip(), tuple(within), when))
    return Triage(tuple(out), tuple(outside))


def outside_spans(source: str, names: Sequence[str]) -> list[tuple[int, int]]:
    """The line spans of the top-level functions and classes called ``names`` in ``source``."""
    return [(node.lineno, node.end_lineno or node.lineno) for node in ast.parse(source).body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in names]


def dead_branch_spans(source: str, pattern: str) -> list[tuple[int, int]]:
    """The line spans of the branches never taken when every test matching ``pattern`` is false: the body of
    ``if X:``, the ``else`` of ``if not X:`` and what follows an ``if not X: return …`` in its block, for each
    ``if`` whose X (as ``ast.unparse`` writes it) matches."""
    rx = re.compile(pattern)
    spans: list[tuple[int, int]] = []

    def span(block: list[ast.stmt], after: int) -> None:
        start = max([n.lineno for n in block[:1]] + [after + 1])  # never the if-test's own line
        end = max((n.end_lineno or n.lineno for n in block), default=0)
        if block and start <= end:
            spans.append((start, end))

    for node in ast.walk(ast.parse(source)):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            for i, stmt in enumerate(block):
                if not isinstance(stmt, ast.If):
                    continue
                negated = isinstance(stmt.test, ast.UnaryOp) and isinstance(stmt.test.op, ast.Not)
                inner = stmt.test.operand if isinstance(stmt.test, ast.UnaryOp) and negated else stmt.test
                if not rx.fullmatch(ast.unparse(inner)):
                    continue
                test_end = stmt.test.end_lineno or stmt.test.lineno
                span(stmt.orelse if negated else stmt.body, test_end)
                if negated and not stmt.orelse and isinstance(stmt.body[-1], (ast.Return, ast.Raise)):
                    span(block[i + 1:], test_end)  # `if not X: return ...`: what follows runs only when X holds
    return spans


def split_equivalent(mutants: list[Mutant], equivalents: list[Equivalent],
                     source: Callable[[str], str] | None = None) -> tuple[list[Mutant], list[tuple[Mutant, str]]]:
    """(mutants to run, (equivalent mutant, reason) pairs). ``source(file)`` is the original module text, needed
    by entries that say ``within`` (without it such an entry matches nothing)."""

    def enclosing(m: Mutant) -> str:  # of the change's last line (a removed decorator starts at the blank before it)
        return enclosing_name(source(m.file), m.line + m.before.count(" \u23ce ")) if source is not None else "\0"

    run: list[Mutant] = []
    left_out: list[tuple[Mutant, str]] = []
    for m in mutants:
        hit = next((e for e in equivalents if e.matches(m, enclosing)), None) if m.kind == "generated" else None
        if hit is None:
            run.append(m)
        else:
            left_out.append((m, UNREACHABLE + hit.reason if hit.unreachable else hit.reason))
    return run, left_out
