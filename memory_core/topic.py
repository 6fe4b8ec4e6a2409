"""Topic files: frontmatter + body (spec §2.1), read and written with python-frontmatter's YAML handler.

A file is a memory doc only when its whole content matches the spec's frontmatter regex (so CRLF files and empty
frontmatter are ignored, parity). Field values come from YAML when the frontmatter is valid YAML and the value is a
string; otherwise from the spec's line-based ``^key:\\s*(.+)$`` lookup, because models write ``description: a: b``.
Values are written through the YAML dumper, so whatever is written reads back identically.

Reading has a fast path for the simple frontmatter ``render_frontmatter`` writes (one ``key: value`` line per
distinct key, each value a one-line plain or single-quoted scalar of printable characters): it gives exactly what
the YAML path gives (property-tested against it) without running the YAML parser; anything else goes to YAML.
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


# One ``key: value`` line whose value YAML reads as exactly that text: a plain scalar that starts with a letter,
# ``_``, ``(``, ``/`` or a non-ASCII character (never a digit, ``.``, ``+`` or ``-``: numbers and dates resolve to
# other types, and a malformed one raises), or a one-line single-quoted scalar. Only YAML-printable characters;
# never a tab, a line or paragraph separator, a BOM, ``: `` or a final ``:`` (a nested mapping), `` #`` (a comment).
_NOT_PRINTABLE: Final = "\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029\\ufeff\\ud800-\\udfff\\ufffe\\uffff"
_SIMPLE_LINE: Final = re.compile(
    r"([A-Za-z_][A-Za-z0-9_]*): +"
    rf"(?:((?![{_NOT_PRINTABLE}])[A-Za-z_(/\x80-\U0010ffff]"
    rf"(?:[^{_NOT_PRINTABLE}#: ]|:(?=[^ ])| +(?=[^ #])|(?<=[^ ])#)*) *"
    rf"|'((?:[^{_NOT_PRINTABLE}']|'')*)' *)"
)
_NULLS: Final = frozenset({"~", "null", "Null", "NULL"})
_WANTED: Final = ("name", "title", "description", "type")


def _simple_fields(frontmatter: str) -> dict[str, str] | None:
    """The fields of a simple frontmatter without the YAML parser, or None when it is not simple."""
    seen: set[str] = set()
    out: dict[str, str] = {}
    for line in frontmatter.split("\n"):
        m = _SIMPLE_LINE.fullmatch(line)
        if m is None or m.group(1) in seen:
            return None  # parity: YAML keeps the last of duplicate keys, the line lookup the first
        key, plain, quoted = m.groups()
        seen.add(key)
        if key not in _WANTED:
            continue
        if quoted is not None:
            out[key] = quoted.replace("''", "'").strip()
        elif plain not in _NULLS:
            # a plain scalar is its own text; a non-string one (bool, number, date) is taken from the line: the same
            out[key] = plain.strip()
    return out


def _fields(frontmatter: str) -> dict[str, str]:
    simple = _simple_fields(frontmatter)
    if simple is not None:
        return simple
    return _yaml_fields(frontmatter)


def _yaml_fields(frontmatter: str) -> dict[str, str]:
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
