"""Index measurements against the spec's caps, computed by the harness (never with the system's own constants).

The caps are spec §4.1 values (200 lines, 25,000 characters, 150 characters per line), counted as the spec counts
them: JS string lengths (UTF-16 code units); a write-time truncation warning the spec appends is not content.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class IndexLimits:
    """The caps an index must respect (spec §4.1 by default; a gates file or scenario may state others)."""

    max_lines: int = 200
    max_chars: int = 25_000
    max_line_chars: int = 150


SPEC_LIMITS: Final = IndexLimits()
WRITE_WARNING_PREFIX: Final = "\n\n> WARNING: MEMORY.md is too large"
"""The spec §4.1 write-time warning starts with this; it is not index content."""


def js_len(text: str) -> int:
    """Length in UTF-16 code units (how the spec counts)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def index_stats(text: str, limits: IndexLimits = SPEC_LIMITS) -> dict[str, int | bool]:
    """``lines``, UTF-8 ``bytes``, longest line in UTF-16 units (``max_line_chars``) and whether the caps hold."""
    lines = text.split("\n") if text else []
    longest = max((js_len(line) for line in lines), default=0)
    cut = text.find(WRITE_WARNING_PREFIX)
    content = text[:cut] if cut >= 0 else text
    content_lines = content.split("\n") if content else []
    within = (
        len(content_lines) <= limits.max_lines
        and js_len(content) <= limits.max_chars
        and all(js_len(line) <= limits.max_line_chars for line in content_lines)
    )
    return {"lines": len(lines), "bytes": len(text.encode("utf-8")), "max_line_chars": longest, "within": within}


def index_metrics(stats: dict[str, int | bool]) -> dict[str, float | int | bool | None]:
    """``stats`` as probe metrics (``index.lines``, ...): the names interned, one string for every probe instead of
    one each (issue 34: a run holds its probes to the end)."""
    return {sys.intern(f"index.{k}"): v for k, v in stats.items()}
