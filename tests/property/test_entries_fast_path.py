"""parse_entries' first-character shortcuts skip only regexes that could not have matched."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memory_core.files import entries as mod
from memory_core.files.entries import Entry, parse_entries
from memory_core.files.formats import collapse_ws


def reference_parse(body: str) -> list[Entry]:
    """parse_entries without the shortcuts (every regex tried), as it was."""
    out: list[Entry] = []
    current: Entry | None = None
    for line in body.split("\n"):
        trimmed = line.strip()
        if not trimmed or trimmed == mod.NO_ENTRIES or trimmed.startswith("# "):
            continue
        if current is not None and (m := mod._INDENTED_FIELD.match(line.rstrip("\r"))):
            value = collapse_ws(m.group(2))
            if value:
                current = mod._assign(current, m.group(1), value)
            continue
        if m := mod._TOP_FIELD.match(trimmed):
            value = collapse_ws(m.group(2))
            if current is not None and value:
                current = mod._assign(current, m.group(1), value)
            continue
        if current is not None:
            out.append(current)
        summary = mod._BULLET.sub("", trimmed, count=1) if mod._BULLET.match(trimmed) else trimmed
        current = Entry(collapse_ws(summary))
    if current is not None:
        out.append(current)
    return out


PIECES = st.sampled_from(["Why:", "why:", "WHY:", "**Why:**", "**Why**:", "How to apply:", "how_to_apply:", "  ", "\t",
                          " ", "- ", "* ", "-", "*", "\r", "\n", "x", "Fact", "# ", "_No entries yet._", "\u00a0",
                          "\u2003", "How", "W", "h", ":", "**"])


@given(st.lists(PIECES, max_size=30).map("".join))
def test_shortcuts_change_nothing(body: str) -> None:
    assert parse_entries(body) == reference_parse(body)
