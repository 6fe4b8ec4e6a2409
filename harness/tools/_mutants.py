"""Mutants for ``memharness sensitivity``: the spec-mutant catalogue (TOML) and the mutant record.

A spec mutant breaks one rule of the memory spec in one place: an exact snippet (or a regex) that must occur exactly
once in one module of the target package, and its replacement. Library-generated mutants (cosmic-ray's operators)
come from ``harness.tools._generated`` and share the same record.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from importlib import resources
from importlib.machinery import PathFinder
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Final, Literal

from harness.errors import HarnessError
from harness.scenario._toml import file_lines, key_line, parse_toml, table_array

MutantKind = Literal["spec", "generated"]
MUTANT_KEYS: Final = frozenset({"name", "file", "find", "pattern", "replace", "rule", "subsets"})
_NAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")


def default_catalogue() -> Path:
    """The shipped catalogue of spec mutants for the reference core (package data)."""
    return Path(str(resources.files("harness.tools").joinpath("spec_mutants.toml")))


@dataclass(frozen=True, slots=True)
class Mutant:
    """One fault to inject: a whole mutated module text, and where it differs from the original."""

    name: str
    kind: MutantKind
    file: str
    """Module path relative to the target package directory (forward slashes), e.g. ``files/recall.py``."""
    line: int
    """1-based line of the first changed line in the original module."""
    before: str
    """The original source line(s) that changed (stripped, joined with `` ⏎ ``)."""
    after: str
    """The same lines in the mutant."""
    rule: str
    """The spec rule it breaks (spec mutants) or the operator that made it (generated mutants)."""
    mutated: str
    """The complete mutated module text."""
    subsets: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (without the mutated text)."""
        return {"name": self.name, "kind": self.kind, "file": self.file, "line": self.line, "before": self.before,
                "after": self.after, "rule": self.rule, "subsets": list(self.subsets)}


@dataclass(frozen=True, slots=True)
class Target:
    """The package (or single-file module) whose copy gets mutated."""

    name: str
    """Import name, e.g. ``memory_core``."""
    path: Path
    """The package directory, or the module file for a single-file module."""

    @property
    def is_package(self) -> bool:
        return self.path.is_dir()

    def module_path(self, rel: str) -> Path:
        """The file ``rel`` names inside the target (the module itself for a single-file target)."""
        return self.path / rel if self.is_package else self.path

    def modules(self) -> list[str]:
        """Every ``.py`` file of the target, relative, sorted (no ``__pycache__``)."""
        if not self.is_package:
            return [self.path.name]
        return sorted(p.relative_to(self.path).as_posix() for p in self.path.rglob("*.py")
                      if "__pycache__" not in p.parts)


def resolve_target(name: str) -> Target:
    """Find the target's source without importing it; a usage error when it is not importable from source."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise HarnessError(f"--target: expected a top-level package or module name, got {name!r}")
    if name == "harness":
        raise HarnessError("--target: cannot mutate the harness itself (it is the oracle)")
    try:
        # installed or on sys.path; else the current directory, which `memharness run --system` also imports from
        spec = find_spec(name) or PathFinder.find_spec(name, [os.getcwd()])
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        raise HarnessError(f"--target: no importable package or module named {name!r}")
    if spec.submodule_search_locations:
        locations = list(spec.submodule_search_locations)
        if len(locations) != 1:
            raise HarnessError(f"--target: {name!r} is a namespace package spread over {len(locations)} directories")
        return Target(name, Path(locations[0]).resolve())
    if spec.origin and spec.origin.endswith(".py"):
        return Target(name, Path(spec.origin).resolve())
    raise HarnessError(f"--target: {name!r} has no Python source to mutate ({spec.origin})")


def describe_change(original: str, mutated: str) -> tuple[int, str, str]:
    """(first changed line, original lines, mutated lines) of two module texts (lines stripped, joined by ⏎)."""
    a, b = original.splitlines(), mutated.splitlines()
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end_a, end_b = len(a), len(b)
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a, end_b = end_a - 1, end_b - 1
    if start == len(a) == len(b):  # only trailing-newline or line-ending differences
        return max(1, len(a)), "", ""
    if end_a == start and start > 0:  # lines only inserted: name the line they follow, as it was and as it is now
        start -= 1
    return start + 1, " ⏎ ".join(x.strip() for x in a[start:end_a]), " ⏎ ".join(x.strip() for x in b[start:end_b])


def _entry_line(text: str, name: object, header: int) -> int:
    """The catalogue line of an entry: its ``name = …`` line, else its ``[[mutant]]`` header."""
    if isinstance(name, str):
        for n, line in enumerate(file_lines(text), 1):
            if re.match(rf"""^\s*name\s*=\s*["']{re.escape(name)}["']\s*$""", line):
                return n
    return header


def _str_field(entry: dict[str, Any], key: str, where: str, *, required: bool = True) -> str | None:
    value = entry.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (not value and key != "replace"):
        raise HarnessError(f"{where}: {key}: expected a non-empty string")
    return value


def _apply(source: str, entry: dict[str, Any], where: str, rel: str) -> str:
    find = _str_field(entry, "find", where, required=False)
    pattern = _str_field(entry, "pattern", where, required=False)
    replace = _str_field(entry, "replace", where)
    assert replace is not None
    if (find is None) == (pattern is None):
        raise HarnessError(f"{where}: find/pattern: expected exactly one of them")
    if find is not None:
        count = source.count(find)
        if count != 1:
            raise HarnessError(f"{where}: find: occurs {count} times in {rel} (expected exactly 1)")
        return source.replace(find, replace, 1)
    assert pattern is not None
    try:
        regex = re.compile(pattern, re.MULTILINE)
    except re.error as exc:
        raise HarnessError(f"{where}: pattern: invalid regex ({exc})") from None
    count = len(regex.findall(source))
    if count != 1:
        raise HarnessError(f"{where}: pattern: matches {count} times in {rel} (expected exactly 1)")
    try:
        return regex.sub(replace, source, count=1)
    except (re.error, IndexError) as exc:
        raise HarnessError(f"{where}: replace: invalid replacement for the pattern ({exc})") from None


def read_toml(path: Path, what: str) -> tuple[str, dict[str, Any]]:
    """The text and parsed tables of a TOML file; a one-line error naming the file otherwise. A regular UTF-8 file
    only: a FIFO (it held ``sensitivity`` for ever), a device or a directory is refused without blocking."""
    from harness.scenario._limits import MAX_RUN_FILE_BYTES
    from harness.scenario._yaml import decode_utf8, read_regular

    text = decode_utf8(read_regular(path, limit=MAX_RUN_FILE_BYTES, error=HarnessError), path, HarnessError)
    return text, parse_toml(path, text)


def load_catalogue(path: Path, target: Target) -> list[Mutant]:
    """Read and validate a catalogue against the target's current source; every error names file:line and field."""
    text, data = read_toml(path, "catalogue")
    unknown_top = sorted(set(data) - {"mutant"})
    if unknown_top:
        raise HarnessError(f"{path}:{key_line(text, unknown_top[0])}: {unknown_top[0]}: unknown table (expected "
                           "[[mutant]] entries)")
    entries = table_array(path, text, data, "mutant")
    if not entries:
        raise HarnessError(f"{path}:1: mutant: expected at least one [[mutant]] entry")
    out: list[Mutant] = []
    seen: dict[str, int] = {}
    sources: dict[str, str] = {}
    for i, (header, entry) in enumerate(entries):
        line = _entry_line(text, entry.get("name"), header)
        name = entry.get("name")
        where = f"{path}:{line}: mutant {name!r}" if isinstance(name, str) else f"{path}:{line}: mutant #{i + 1}"
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise HarnessError(f"{where}: name: expected letters, digits and '-' (e.g. recall-limit-4)")
        if name in seen:
            raise HarnessError(f"{where}: name: duplicate of the mutant on line {seen[name]}")
        seen[name] = line
        unknown = sorted(set(entry) - MUTANT_KEYS)
        if unknown:
            raise HarnessError(f"{where}: {unknown[0]}: unknown key (expected {', '.join(sorted(MUTANT_KEYS))})")
        rel = _str_field(entry, "file", where)
        rule = _str_field(entry, "rule", where)
        assert rel is not None
        assert rule is not None
        subsets = entry.get("subsets", [])
        if not isinstance(subsets, list) or not all(isinstance(s, str) and s for s in subsets):
            raise HarnessError(f"{where}: subsets: expected a list of names")
        module = target.module_path(rel)
        if target.is_package and (".." in Path(rel).parts or not module.is_file()):
            raise HarnessError(f"{where}: file: {rel} is not a module of {target.name} ({target.path})")
        if rel not in sources:
            sources[rel] = module.read_text(encoding="utf-8")
        original = sources[rel]
        mutated = _apply(original, entry, where, f"{target.name}/{rel}")
        if mutated == original:
            raise HarnessError(f"{where}: replace: the mutant is identical to the original source")
        try:
            compile(mutated, f"{target.name}/{rel}", "exec")
        except SyntaxError as exc:
            raise HarnessError(f"{where}: replace: the mutated {rel} does not compile (line {exc.lineno}: {exc.msg})") from None
        first, before, after = describe_change(original, mutated)
        out.append(Mutant(name, "spec", rel, first, before, after, rule, mutated, tuple(subsets)))
    return out


def select(mutants: list[Mutant], *, only: list[str] | None, subset: str | None) -> list[Mutant]:
    """Keep the named mutants (``--only``) and/or one subset; an unknown name or an empty subset is a usage error."""
    chosen = mutants
    if subset is not None:
        chosen = [m for m in chosen if subset in m.subsets]
        if not chosen:
            known = sorted({s for m in mutants for s in m.subsets})
            raise HarnessError(f"--subset: no mutant is in subset {subset!r} (known: {', '.join(known) or 'none'})")
    if only:
        names = {m.name for m in mutants}
        missing = [n for n in only if n not in names]
        if missing:
            raise HarnessError(f"--only: unknown mutant {missing[0]!r} (see the catalogue for names)")
        chosen = [m for m in chosen if m.name in only]
        if not chosen:
            raise HarnessError("--only: none of the named mutants is in the selected subset")
    return chosen
