"""The ``MEMORY.md`` index: build with caps (spec §4.1), rebuild (§4.2), load-time truncation (§4.3).

All lengths are JS string lengths (UTF-16 code units), as upstream counts them (parity, spec §12).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Final

from memory_core.formats import js_len, js_slice
from memory_core.scan import DocCache, scan
from memory_core.store import INDEX_KEY, Store
from memory_core.topic import TopicDoc

MAX_INDEX_LINES: Final = 200
MAX_INDEX_CHARS: Final = 25_000
MAX_INDEX_LINE_CHARS: Final = 150
WRITE_WARNING: Final = (
    "\n\n> WARNING: MEMORY.md is too large; only part of it was written. "
    "Keep index entries concise and move detail into topic files."
)


@dataclass(frozen=True, slots=True)
class IndexBuild:
    """A built index and whether any cap cut it."""

    text: str
    """The ``MEMORY.md`` content (no trailing newline)."""
    truncated: bool
    """True when the line or size cap removed something (the write-time warning is appended)."""


def index_line(doc: TopicDoc) -> str:
    """``- [title](path) — description-or-type``, capped at 150 UTF-16 units with ``…``."""
    line = f"- [{doc.title}]({doc.relative_path}) \u2014 {doc.description or doc.type}"
    if js_len(line) > MAX_INDEX_LINE_CHARS:
        line = js_slice(line, MAX_INDEX_LINE_CHARS - 1).rstrip() + "\u2026"
    return line


def _cut_to_size(text: str) -> str:
    """Cut before the last newline at or before 25,000 units, or hard-cut there (spec §4.1)."""
    limit_prefix = js_slice(text, MAX_INDEX_CHARS + 1)
    cut = limit_prefix.rfind("\n")
    return text[:cut] if cut > 0 else js_slice(text, MAX_INDEX_CHARS)


def build_index(docs: Sequence[TopicDoc]) -> IndexBuild:
    """One line per doc in scan order; 200-line cap; 25,000-unit cap; warning when cut (spec §4.1)."""
    lines = [index_line(d) for d in docs]
    truncated = len(lines) > MAX_INDEX_LINES
    text = "\n".join(lines[:MAX_INDEX_LINES])
    if js_len(text) > MAX_INDEX_CHARS:
        text = _cut_to_size(text)
        truncated = True
    return IndexBuild(text + WRITE_WARNING if truncated else text, truncated)


def rebuild_index(store: Store, *, cache: DocCache | None = None) -> IndexBuild:
    """Scan, build and overwrite ``MEMORY.md`` (spec §4.2)."""
    built = build_index(scan(store, cache=cache).docs)
    store.write(INDEX_KEY, built.text)
    return built


def _kb(units: int) -> str:
    return str((Decimal(units) / Decimal(1024)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def truncate_index_for_prompt(index: str) -> str:
    """Load-time truncation of the trimmed index with the §4.3 warning naming the cap that fired."""
    trimmed = index.strip()
    lines = trimmed.split("\n")
    line_count, byte_count = len(lines), js_len(trimmed)
    over_lines, over_bytes = line_count > MAX_INDEX_LINES, byte_count > MAX_INDEX_CHARS
    if not over_lines and not over_bytes:
        return trimmed
    text = "\n".join(lines[:MAX_INDEX_LINES])
    if js_len(text) > MAX_INDEX_CHARS:
        text = _cut_to_size(text)
    if over_bytes and not over_lines:
        reason = f"{_kb(byte_count)} KB (limit: 24.4 KB) \u2014 index entries are too long"
    elif over_lines and not over_bytes:
        reason = f"{line_count} lines (limit: {MAX_INDEX_LINES})"
    else:
        reason = f"{line_count} lines and {_kb(byte_count)} KB"
    return (
        f"{text}\n\n> WARNING: MEMORY.md is {reason}. Only part of it was loaded. "
        "Keep index entries to one line under ~200 chars; move detail into topic files."
    )


def index_stats(text: str) -> dict[str, int | bool]:
    """Lines, UTF-8 bytes, longest line (UTF-16 units) and whether the §4.1 caps hold (DESIGN §5)."""
    lines = text.split("\n") if text else []
    longest = max((js_len(line) for line in lines), default=0)
    content = text.removesuffix(WRITE_WARNING)
    content_lines = content.split("\n") if content else []
    within = (
        len(content_lines) <= MAX_INDEX_LINES
        and js_len(content) <= MAX_INDEX_CHARS
        and all(js_len(line) <= MAX_INDEX_LINE_CHARS for line in content_lines)
    )
    return {"lines": len(lines), "bytes": len(text.encode("utf-8")), "max_line_chars": longest, "within": within}
