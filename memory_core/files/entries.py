"""Body entries of a topic file: parse, render, merge (spec §2.2-§2.4)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from memory_core.files.formats import collapse_ws

NO_ENTRIES: Final = "_No entries yet._"

# The CodeQL-fixed forms (spec §12 review fix 1). ``(?::\*\*|(?:\*\*)?:)`` also accepts ``**Why:**``.
# fix: spec §12 — upstream only allows ``**Why**:``, so the bold ``**Why:**`` that its own prompts teach
# parsed as why = "** text"; here the closing ``**`` may stand on either side of the colon.
_INDENTED_FIELD: Final = re.compile(
    r"^[\t ]{2,}(?:[-*][\t ]+)?(?:\*\*)?(Why|How to apply|How_to_apply)(?::\*\*|(?:\*\*)?:)[\t ]*(\S.*)$",
    re.IGNORECASE,
)
_TOP_FIELD: Final = re.compile(
    r"^(?:\*\*)?(Why|How to apply|How_to_apply)(?::\*\*|(?:\*\*)?:)[ \t]*(\S.*)$", re.IGNORECASE
)
_BULLET: Final = re.compile(r"^[-*]\s+")
_FIELD_FIRST: Final = frozenset("*WwHh")  # every character ``_TOP_FIELD`` (case-insensitive) can start with


@dataclass(frozen=True, slots=True)
class Entry:
    """One memory entry: a summary line with optional ``Why:`` and ``How to apply:`` lines."""

    summary: str
    """The fact or rule, whitespace-collapsed."""
    why: str | None = None
    """The reason, when given."""
    how_to_apply: str | None = None
    """When and how to use it, when given."""

    def search_text(self) -> str:
        """Summary, why and how joined by spaces, lower-cased (spec §2.4)."""
        return " ".join(p for p in (self.summary, self.why, self.how_to_apply) if p).lower()


def _assign(entry: Entry, key: str, value: str) -> Entry:
    if key.lower() == "why":
        return Entry(entry.summary, value, entry.how_to_apply)
    return Entry(entry.summary, entry.why, value)


def parse_entries(body: str) -> list[Entry]:
    """Parse a body line by line; every plain-text line is an entry (spec §2.2, parity)."""
    entries: list[Entry] = []
    current: Entry | None = None
    for line in body.split("\n"):
        trimmed = line.strip()
        if not trimmed or trimmed == NO_ENTRIES or trimmed.startswith("# "):
            continue
        # the first-character tests only skip regexes that cannot match (cheap on the common summary line)
        if current is not None and line[0] in "\t " and (m := _INDENTED_FIELD.match(line.rstrip("\r"))):
            value = collapse_ws(m.group(2))
            if value:
                current = _assign(current, m.group(1), value)
            continue
        if trimmed[0] in _FIELD_FIRST and (m := _TOP_FIELD.match(trimmed)):
            value = collapse_ws(m.group(2))
            if current is not None and value:
                current = _assign(current, m.group(1), value)
            # parity: spec §2.2 — a field line before any summary is dropped
            continue
        if current is not None:
            entries.append(current)
        summary = _BULLET.sub("", trimmed, count=1) if trimmed[0] in "-*" and _BULLET.match(trimmed) else trimmed
        current = Entry(collapse_ws(summary))
    if current is not None:
        entries.append(current)
    return entries


def render_entries(entries: Sequence[Entry]) -> str:
    """Render entries in the flat format, blank lines between, no trailing newline (spec §2.3)."""
    if not entries:
        return NO_ENTRIES
    lines: list[str] = []
    for i, entry in enumerate(entries):
        if i:
            lines.append("")
        lines.append(collapse_ws(entry.summary))
        if entry.why:
            lines += ["", f"Why: {entry.why}"]
        if entry.how_to_apply:
            lines += ["", f"How to apply: {entry.how_to_apply}"]
    return "\n".join(lines)


def merge_entry(current: Entry, incoming: Entry) -> Entry:
    """Incoming summary wins when non-empty; existing why/how win (spec §2.4)."""
    return Entry(
        incoming.summary or current.summary,
        current.why if current.why is not None else incoming.why,
        current.how_to_apply if current.how_to_apply is not None else incoming.how_to_apply,
    )
