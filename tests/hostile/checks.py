"""Shared assertions of the hostile-input suite: what a safe ``MEMORY.md`` looks like."""

from __future__ import annotations

import posixpath
import re
from urllib.parse import unquote

LINK = re.compile(r"\]\(([^)]*)\)")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def inside_root(target: str) -> bool:
    """Whether a link target, percent-decoded or not, names a path inside the memory root."""
    for candidate in (target, unquote(target)):
        if SCHEME.match(candidate) or candidate.startswith(("/", "\\")):
            return False
        norm = posixpath.normpath(candidate)
        if norm == ".." or norm.startswith("../"):
            return False
    return True


def index_targets(text: str, *, docs: int) -> list[str]:
    """Assert ``text`` holds exactly one line per doc, each with exactly one link inside the root; the targets."""
    lines = text.splitlines() if text else []
    assert lines == (text.split("\n") if text else []), "a line break other than \\n in MEMORY.md"
    assert len(lines) == docs, f"{len(lines)} index lines for {docs} topic files: {text!r}"
    targets = []
    for line in lines:
        assert line.startswith("- ["), line
        assert line.count("[") == 1, f"forged brackets: {line!r}"
        assert line.count("]") == 1, f"forged brackets: {line!r}"
        links = LINK.findall(line)
        assert len(links) == 1, f"{len(links)} links in {line!r}"
        assert "<" not in line, line
        assert "`" not in line, line
        assert inside_root(links[0]), f"link leaves the root: {line!r}"
        targets.append(unquote(links[0], errors="surrogateescape"))
    return targets
