"""Memory root resolution and path safety (spec §1.2-§1.5; Claude Code ``validateMemoryPath``).

Environment variables reach this module as an ``environ`` mapping, never through ``os.environ``, and nothing
is memoized process-wide (spec §1.3's cache needs clearing in tests; callers keep the result instead).
"""

from __future__ import annotations

import os
import posixpath
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from memory_core.errors import UnsafePathError

MEMORY_DIR_NAME: Final = "memory"
INDEX_FILENAME: Final = "MEMORY.md"
META_FILENAME: Final = "meta.json"
CURSOR_FILENAME: Final = "extract-cursor.json"
LOCK_FILENAME: Final = "consolidation.lock"
QWEN_DIR: Final = ".qwen"
ENV_BASE_DIR: Final = "QWEN_CODE_MEMORY_BASE_DIR"
ENV_LOCAL: Final = "QWEN_CODE_MEMORY_LOCAL"

_UNSAFE_CHARS: Final = re.compile(r"[^a-zA-Z0-9]")
_DRIVE_ROOT: Final = re.compile(r"^[A-Za-z]:[\\/]?$")
_URL: Final = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")


@dataclass(frozen=True, slots=True)
class MemoryLayout:
    """Where each memory file lives (spec §1.4): topic files and the index under ``root``, state beside it."""

    root: Path
    """The memory directory (``.../memory``)."""

    @property
    def state_dir(self) -> Path:
        """``dirname(root)``: holds ``meta.json``, ``extract-cursor.json`` and ``consolidation.lock``."""
        return self.root.parent

    @property
    def index_path(self) -> Path:
        """``<root>/MEMORY.md``."""
        return self.root / INDEX_FILENAME


def sanitize_cwd(path: str, *, windows: bool = False) -> str:
    """Replace every character outside ``[a-zA-Z0-9]`` with ``-``, one for one (spec §1.3)."""
    return _UNSAFE_CHARS.sub("-", path.lower() if windows else path)


def memory_base_dir(*, environ: Mapping[str, str], home: Path) -> Path:
    """``$QWEN_CODE_MEMORY_BASE_DIR`` when non-empty, else ``<home>/.qwen`` (spec §1.2), validated.

    fix: spec §1.2 — upstream uses the variable as given; here it goes through ``validate_memory_path`` (Claude
    Code's rules: ``~/`` expanded, relative / root / UNC / drive / URL / NUL refused with ``UnsafePathError``).
    """
    configured = environ.get(ENV_BASE_DIR, "")
    return validate_memory_path(configured if configured else str(home / QWEN_DIR), home=home)


def find_git_root(start: Path) -> Path | None:
    """The first directory at or above ``start`` that has an entry named ``.git`` (spec §1.3)."""
    current = Path(os.path.abspath(start))
    while True:
        if os.path.lexists(current / ".git"):
            return current
        if current.parent == current:
            return None
        current = current.parent


def _read_trimmed(path: Path) -> str:
    return path.read_text(encoding="utf-8").strip()


def find_canonical_git_root(start: Path) -> Path | None:
    """The git root, mapped from a linked worktree to its main checkout so both share memory (spec §1.3)."""
    git_root = find_git_root(start)
    if git_root is None:
        return None
    try:
        content = _read_trimmed(git_root / ".git")
    except OSError:
        return git_root  # .git is a directory (a normal checkout) or unreadable
    if not content.startswith("gitdir:"):
        return git_root
    try:
        worktree_git_dir = Path(os.path.abspath(git_root / content[len("gitdir:") :].strip()))
        common_dir = Path(os.path.abspath(worktree_git_dir / _read_trimmed(worktree_git_dir / "commondir")))
        if Path(os.path.abspath(worktree_git_dir.parent)) != common_dir / "worktrees":
            return git_root
        backlink = Path(os.path.realpath(_read_trimmed(worktree_git_dir / "gitdir")))
    except OSError:
        return git_root  # submodules have no commondir
    if backlink != Path(os.path.realpath(git_root)) / ".git":
        return git_root
    chosen = common_dir if common_dir.name != ".git" else common_dir.parent
    return Path(unicodedata.normalize("NFC", str(chosen)))


def memory_root(project_root: Path, *, environ: Mapping[str, str], home: Path) -> Path:
    """The memory directory for a project (spec §1.3), local mode included; not memoized."""
    if environ.get(ENV_LOCAL) == "1":
        return project_root / QWEN_DIR / MEMORY_DIR_NAME
    canonical = find_canonical_git_root(project_root) or Path(os.path.abspath(project_root))
    base = memory_base_dir(environ=environ, home=home)
    return base / "projects" / sanitize_cwd(str(canonical)) / MEMORY_DIR_NAME


def is_memory_path(path: str | Path, root: str | Path) -> bool:
    """Whether ``path`` is the memory root or inside it, by ``path.relative`` (spec §1.5).

    parity: spec §1.5 — no symlink resolution, and a child literally named ``..foo`` counts as outside.
    """
    rel = posixpath.relpath(posixpath.normpath(str(path)), posixpath.normpath(str(root)))
    if rel == ".":
        return True
    return not rel.startswith("..") and not posixpath.isabs(rel)


def validate_memory_path(raw: str, *, home: Path) -> Path:
    """Normalise a configured memory directory or refuse it (Claude Code ``validateMemoryPath``).

    Rejects NUL bytes, UNC paths (``\\\\server``, ``//server``), drive roots (``C:``), URLs, ``~`` forms that land on
    home or above, relative paths (``.``, ``..``, ``mem``) and near-root paths (shorter than 3 characters once
    normalised, ``/``). ``~/rest`` expands to ``home/rest``: the remainder is always taken relative to home, so
    ``~//etc`` and ``~///etc`` give ``<home>/etc``, never ``/etc`` or ``//etc``. Returns the NFC-normalised absolute
    path; every refusal is an ``UnsafePathError`` whose ``reason`` names the rule.
    """
    if not isinstance(raw, str):
        raise UnsafePathError(f"memory path {raw!r} is not a string", reason="not_a_string")
    if "\x00" in raw:
        raise UnsafePathError(f"memory path {raw!r} contains a NUL byte", reason="nul")
    if raw.startswith(("\\\\", "//")):
        raise UnsafePathError(f"memory path {raw!r} is a UNC path; expected a local directory", reason="unc")
    if _DRIVE_ROOT.match(raw):
        raise UnsafePathError(f"memory path {raw!r} is a drive root; expected a directory below it",
                              reason="drive_root")
    if _URL.match(raw):
        raise UnsafePathError(f"memory path {raw!r} is a URL; expected a local directory", reason="url")
    candidate = raw
    if raw == "~" or raw.startswith("~/"):
        # fix: Claude Code rule — the remainder is relative to home even when it starts with more slashes
        rest = posixpath.normpath(raw[2:].lstrip("/")) if len(raw) > 2 else "."
        if rest in (".", "..") or rest.startswith("../"):
            raise UnsafePathError(f"memory path {raw!r} expands to the home directory or above",
                                  reason="home_or_above")
        candidate = posixpath.join(str(home), rest)
    if not posixpath.isabs(candidate):
        raise UnsafePathError(f"memory path {raw!r} is relative; expected an absolute path", reason="relative")
    normalised = posixpath.normpath(candidate)
    if normalised.startswith("//"):
        normalised = "/" + normalised.lstrip("/")  # POSIX keeps a leading '//'; it is no UNC share here
    normalised = unicodedata.normalize("NFC", normalised.rstrip("/") or "/")
    if len(normalised) < 3:
        raise UnsafePathError(f"memory path {raw!r} is the filesystem root or too close to it", reason="too_short")
    return Path(normalised)
