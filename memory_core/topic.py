"""Topic files: frontmatter + body (spec §2.1), read and written with python-frontmatter's YAML handler.

A file is a memory doc only when its whole content matches the spec's frontmatter regex (so CRLF files and empty
frontmatter are ignored, parity). Field values come from YAML when the frontmatter is valid YAML and the value is a
string; otherwise from the spec's line-based ``^key:\\s*(.+)$`` lookup, because models write ``description: a: b``.
Values are written through the YAML dumper, so whatever is written reads back identically.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Final, Literal, get_args

import yaml
from frontmatter.default_handlers import YAMLHandler

from memory_core.formats import collapse_ws

MemoryType = Literal["user", "feedback", "project", "reference"]
MEMORY_TYPES: Final[tuple[MemoryType, ...]] = get_args(MemoryType)

_FRONTMATTER: Final = re.compile(r"^---\n([\s\S]*?)\n---\n?([\s\S]*)\Z")
_YAML: Final = YAMLHandler()


@dataclass(frozen=True, slots=True)
class TopicDoc:
    """A parsed topic file (spec §3 doc shape)."""

    type: MemoryType
    """One of the four memory types."""
    relative_path: str
    """Forward-slash path relative to the memory root."""
    title: str
    """``name`` ?? ``title`` ?? the type."""
    description: str
    """``description`` or ``''``."""
    body: str
    """The body with surrounding whitespace trimmed."""
    mtime_ms: float = 0.0
    """Modification time in epoch milliseconds."""
    frontmatter: str = ""
    """The raw frontmatter text, kept byte-for-byte for rewrites (spec §8.3)."""

    @property
    def filename(self) -> str:
        """The basename of the path."""
        return posixpath.basename(self.relative_path)

    @property
    def normalized_body(self) -> str:
        """The body, or ``''`` when it is the empty-entries sentinel (spec §7.3)."""
        return "" if self.body == "_No entries yet._" else self.body


def _line_field(frontmatter: str, key: str) -> str | None:
    # parity: spec §2.1 — ``\s*`` may cross a newline, so an empty ``name:`` captures the next line.
    m = re.search(rf"^{re.escape(key)}:\s*(.+)$", frontmatter, re.MULTILINE)
    return m.group(1).strip() if m else None


def _fields(frontmatter: str) -> dict[str, str]:
    try:
        loaded = _YAML.load(frontmatter)
    except yaml.YAMLError:
        loaded = None
    data = loaded if isinstance(loaded, dict) else {}
    out: dict[str, str] = {}
    for key in ("name", "title", "description", "type"):
        value = data.get(key)
        if isinstance(value, str):
            out[key] = value.strip()
        elif value is None and key in data:
            continue  # an explicitly empty YAML value means "absent"
        elif (line := _line_field(frontmatter, key)) is not None:
            out[key] = line
    return out


def parse_topic(text: str, *, relative_path: str, mtime_ms: float = 0.0) -> TopicDoc | None:
    """Parse a topic file, or None when it is not a memory doc (no frontmatter, bad or missing type)."""
    m = _FRONTMATTER.match(text)
    if m is None:
        return None
    fields = _fields(m.group(1))
    kind = fields.get("type")
    if kind not in MEMORY_TYPES:
        return None
    return TopicDoc(
        type=kind,
        relative_path=relative_path,
        title=fields.get("name") or fields.get("title") or kind,
        description=fields.get("description", ""),
        body=m.group(2).strip(),
        mtime_ms=mtime_ms,
        frontmatter=m.group(1),
    )


def render_frontmatter(*, name: str, description: str, kind: MemoryType) -> str:
    """YAML frontmatter text (without the ``---`` fences) with keys in the taught order (spec §2.1)."""
    meta: dict[str, object] = {"name": collapse_ws(name), "description": collapse_ws(description), "type": kind}
    return str(_YAML.export(meta, sort_keys=False, width=1_000_000))


def render_topic(*, name: str, description: str, kind: MemoryType, body: str) -> str:
    """A whole topic file: fences, frontmatter, a blank line, the body and a trailing newline (spec §5.5)."""
    return f"---\n{render_frontmatter(name=name, description=description, kind=kind)}\n---\n\n{body}\n"


def replace_body(text: str, new_body: str) -> str | None:
    """The file text with its body replaced and frontmatter kept byte-for-byte; None when it is no doc."""
    m = _FRONTMATTER.match(text)
    if m is None:
        return None
    return f"---\n{m.group(1)}\n---\n\n{new_body}\n"
