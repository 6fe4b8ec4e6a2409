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

from memory_core.files.formats import collapse_ws

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


# A simple line is ``key: value`` with an identifier key and a value that YAML reads as exactly that text: a plain
# scalar that starts with a letter, ``_``, ``(``, ``/`` or a non-ASCII character (never a digit, ``.``, ``+``, ``-``:
# numbers and dates resolve to other types, and a malformed one raises) and holds no ``: ``, final ``:`` or `` #``,
# or a one-line single-quoted scalar. Only characters Python calls printable (all of them YAML-printable too; no
# tab, no line or paragraph separator, no BOM).
_PLAIN_HEAD: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_(/")
_NULLS: Final = frozenset({"~", "null", "Null", "NULL"})
_WANTED: Final = ("name", "title", "description", "type")


def _simple_fields(frontmatter: str) -> dict[str, str] | None:
    """The fields of a simple frontmatter without the YAML parser, or None when it is not simple."""
    out: dict[str, str] = {}
    seen: set[str] = set()
    for line in frontmatter.split("\n"):
        key, sep, rest = line.partition(": ")
        value = rest.strip(" ")
        if not sep or not value or key in seen or not (key.isascii() and key.isidentifier()) or len(key) > 1024:
            return None  # parity: YAML keeps the last of duplicate keys, the line lookup the first; it refuses a
            # simple key over 1024 characters (the file then takes the line lookup)
        seen.add(key)
        if value[0] == "'":
            inner = value[1:-1]
            if len(value) < 2 or value[-1] != "'" or "'" in inner.replace("''", "") or not inner.isprintable():
                return None
            if key in _WANTED:
                out[key] = inner.replace("''", "'").strip()
        elif (
            value.isprintable() and (value[0] in _PLAIN_HEAD or value[0] >= "\x80")
            and ": " not in value and " #" not in value and value[-1] != ":"
        ):
            # a plain scalar is its own text; a non-string one (a bool) is read from the line, the same text
            if key in _WANTED and value not in _NULLS:
                out[key] = value.strip()
        else:
            return None
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


def split_frontmatter(text: str) -> tuple[str, str] | None:
    """(frontmatter, rest) exactly as ``_FRONTMATTER`` matches them, without running the regex over the body."""
    if not text.startswith("---\n"):
        return None
    end = text.find("\n---", 4)  # the regex's lazy group stops at the first closing fence
    if end < 0:
        return None
    body_at = end + 5 if text.startswith("\n", end + 4) else end + 4
    return text[4:end], text[body_at:]


def parse_topic(text: str, *, relative_path: str, mtime_ms: float = 0.0) -> TopicDoc | None:
    """Parse a topic file, or None when it is not a memory doc (no frontmatter, bad or missing type)."""
    parts = split_frontmatter(text)
    if parts is None:
        return None
    frontmatter, rest = parts
    fields = _fields(frontmatter)
    kind = fields.get("type")
    if kind not in MEMORY_TYPES:
        return None
    return TopicDoc(
        type=kind,
        relative_path=relative_path,
        title=fields.get("name") or fields.get("title") or kind,
        description=fields.get("description", ""),
        body=rest.strip(),
        mtime_ms=mtime_ms,
        frontmatter=frontmatter,
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
    parts = split_frontmatter(text)
    if parts is None:
        return None
    return f"---\n{parts[0]}\n---\n\n{new_body}\n"
