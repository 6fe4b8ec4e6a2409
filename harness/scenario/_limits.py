"""Documented bounds on scenario input (``docs/limits.md`` lists each one; a test keeps the two in step).

Every bound is checked at ``validate`` time with a ``file:line: field: what`` error, so whatever ``validate``
accepts, ``run`` can run: no input reaches the replay with a size, a date or a path the replay cannot handle.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime, timedelta
from typing import Final

MAX_FILE_BYTES: Final = 2 * 1024 * 1024
"""A scenario file is at most 2 MiB (read at most this + 1 bytes)."""
MAX_LINE_CHARS: Final = 100_000
"""A line of a scenario file is at most 100,000 characters."""
MAX_DEPTH: Final = 64
"""YAML nesting depth (collections inside collections), anywhere, including ``scripted_model``."""
MAX_NODES: Final = 300_000
"""YAML nodes after alias expansion (alias bombs), counted over the whole document."""
MAX_REPEAT: Final = 1000
"""``memories[].repeat``."""
MAX_MEMORIES: Final = 5000
"""Seeded memories in total, after ``repeat`` expansion."""
MAX_SEED_CHARS: Final = 20_000_000
"""Characters of seeded memory text in total (name + description + body + raw), after ``repeat`` expansion."""
MAX_STEPS: Final = 10_000
"""Steps in one scenario."""
MAX_TURNS: Final = 50_000
"""Conversation turns in one scenario (all sessions)."""
MAX_LIST_ITEMS: Final = 10_000
"""Items of any other list (facts, tags, match phrases, fact ids, checks, scripted replies)."""
MAX_TEXT_CHARS: Final = 200_000
"""Characters of one string field (a body, a turn, a raw file text …)."""
MAX_NAME_CHARS: Final = 200
"""Characters of an identifier: scenario ``id``, fact id, session name, tag."""
MAX_INTEGER: Final = 1_000_000
"""Any integer field (``k``, ``index_lines``, ``max_entries_per_fact``)."""
MAX_DURATION: Final = timedelta(days=36_500)
"""One duration (``advance``, ``age``): at most 100 years; written ``<number><s|m|h|d>``."""
CLOCK_MIN: Final = datetime(2000, 1, 1, tzinfo=UTC)
CLOCK_MAX: Final = datetime(2100, 1, 1, tzinfo=UTC)
"""Every instant a scenario reaches (its clock, clock + advances, clock - a memory's or lock's age) lies in
[2000-01-01, 2100-01-01) UTC: OpenTelemetry timestamps are unsigned nanoseconds and file mtimes must be sane."""
MAX_PATH_BYTES: Final = 1024
"""A memory path (UTF-8) is at most 1024 bytes in total …"""
MAX_COMPONENT_BYTES: Final = 255
"""… each ``/``-separated component at most 255 bytes (the common NAME_MAX) …"""
MAX_COMPONENTS: Final = 16
"""… and at most 16 components deep."""

MAX_RUN_FILE_BYTES: Final = 512 * 1024 * 1024
"""A run-directory file (summary.json, *.jsonl) or a cassette file read back by ``report``/``compare``/``merge``/
replay: at most 512 MiB, a regular file (never a FIFO or a device), JSON nested within Python's recursion limit."""

_DURATION: Final = re.compile(r"(\d{1,12}(?:\.\d{1,9})?)([smhd])", re.ASCII)  # ASCII digits, whole string (fullmatch)
_UNIT_SECONDS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
_WINDOWS_RESERVED: Final = frozenset(
    ["CON", "PRN", "AUX", "NUL"] + [f"COM{i}" for i in range(1, 10)] + [f"LPT{i}" for i in range(1, 10)])
_PORTABLE_FORBIDDEN: Final = frozenset('\\<>:"|?*')
RESERVED_BASENAMES: Final = frozenset({"MEMORY.md"})
"""Names a seeded topic file may not take: the index is the system's. The one exception is ``MEMORY.md`` at the
root seeded with ``raw`` text: a hand-edited index, kept as written (index load-time scenarios)."""
TEMP_PREFIX: Final = ".tmp-"


_BAD_TEXT: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff]")
_BAD_LINE: Final = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def bad_char(text: str, *, allow_newlines: bool = True) -> str | None:
    """A description of the first character a scenario string may not hold, or ``None``.

    Refused in text: C0 controls other than tab/LF/CR (NUL, BEL, ESC …), DEL, C1 controls other than NEL, and
    lone surrogates (they cannot be written as UTF-8). NEL, U+2028 and U+2029 are allowed in text: scenarios use
    them to test that the index is sanitised. Without ``allow_newlines`` (names, paths) every control character
    and line separator is refused."""
    m = (_BAD_TEXT if allow_newlines else _BAD_LINE).search(text)
    if m is None:
        return None
    code = ord(m.group())
    if 0xD800 <= code < 0xE000:
        return f"lone surrogate U+{code:04X}"
    return f"control character U+{code:04X}" if code < 0x2028 or code > 0x2029 else f"line separator U+{code:04X}"


def duration(raw: str) -> timedelta | str:
    """A duration, or why it is refused."""
    m = _DURATION.fullmatch(raw)
    if m is None:
        return f"expected a duration like 30s, 10m, 25h or 3d, got {raw!r:.60}"
    seconds = float(m.group(1)) * _UNIT_SECONDS[m.group(2)]
    if seconds > MAX_DURATION.total_seconds():
        return f"duration {raw!r:.60} is longer than the limit of {MAX_DURATION.days}d"
    return timedelta(seconds=seconds)


def instant_problem(moment: datetime) -> str | None:
    """Why ``moment`` is outside the supported range, or ``None``."""
    if not CLOCK_MIN <= moment < CLOCK_MAX:
        return (f"{moment.isoformat()} is outside the supported range "
                f"[{CLOCK_MIN:%Y-%m-%d}, {CLOCK_MAX:%Y-%m-%d}) UTC")
    return None


def memory_path_problem(path: str, *, topic: bool = True) -> str | None:
    """Why ``path`` cannot be a memory file path relative to the memory root, or ``None``.

    ``topic``: a seeded topic file (must end in ``.md`` and may not be the index)."""
    if not path:
        return "expected a non-empty path"
    bad = bad_char(path, allow_newlines=False)
    if bad:
        return f"{bad} in the path"
    if path.startswith("/") or (len(path) > 1 and path[1] == ":" and path[0].isalpha()):
        return "expected a relative path inside the memory root, got an absolute one"
    forbidden = sorted(set(path) & _PORTABLE_FORBIDDEN)
    if forbidden:
        return f"character {forbidden[0]!r} is not portable in a file name"
    size = len(path.encode("utf-8"))
    if size > MAX_PATH_BYTES:
        return f"path is {size} bytes; the limit is {MAX_PATH_BYTES}"
    parts = path.split("/")
    if len(parts) > MAX_COMPONENTS:
        return f"path is {len(parts)} components deep; the limit is {MAX_COMPONENTS}"
    for part in parts:
        if part in ("", ".", ".."):
            return f"expected a normalised path without empty, '.' or '..' components, got {path!r:.80}"
        if len(part.encode("utf-8")) > MAX_COMPONENT_BYTES:
            return f"component {part[:40]!r}… is {len(part.encode('utf-8'))} bytes; the limit is {MAX_COMPONENT_BYTES}"
        if part.endswith((" ", ".")) or part != part.strip():
            return f"component {part!r:.80} starts or ends with a space or ends with a dot"
        if part.split(".", 1)[0].upper() in _WINDOWS_RESERVED:
            return f"component {part!r} is a reserved device name"
        if part.startswith(TEMP_PREFIX):
            return f"component {part!r:.80} uses the store's temp-file prefix {TEMP_PREFIX!r}"
        if unicodedata.normalize("NFC", part) != part:
            return f"component {part!r:.80} is not in Unicode NFC form"
    if topic:
        if not path.endswith(".md") or parts[-1] == ".md":
            return f"expected a .md file name, got {path!r:.80}"
        if parts[-1] in RESERVED_BASENAMES and path not in RESERVED_BASENAMES:
            return f"{parts[-1]} is reserved for the index"
    return None


def name_problem(text: str) -> str | None:
    """Why ``text`` cannot be an identifier (scenario id, fact id, session name, tag), or ``None``."""
    if not text.strip():
        return "expected a non-empty name"
    if len(text) > MAX_NAME_CHARS:
        return f"name is {len(text)} characters; the limit is {MAX_NAME_CHARS}"
    bad = bad_char(text, allow_newlines=False)
    if bad:
        return f"{bad} in a name"
    return None
MAX_RAW_PAD: Final = 4 * 1024 * 1024
MAX_REPLY_PAD: Final = 8 * 1024 * 1024
"""The longest scripted model reply ``{answer: …, pad_to: N}`` can make (characters)."""
"""The largest file a memory's ``raw_pad`` makes (4 MiB: past any read cap a system is likely to have, cheap)."""


_KIND_TAGS: Final = {"a list": {"seq", "omap", "pairs"}, "a mapping": {"map", "set"}, "text": set()}


def check_tag(tag: str | None, kind: str, where: str, line: int, value: str | None = None) -> None:
    """Tags that would be read as something else, or not read at all, are located errors: a standard collection tag
    naming another kind of node (``!!map`` on a list, ``!!seq`` on text); any tag on a mapping or a list but its
    own plain one (``!!set``, ``!!omap``, ``!foo``, ``!!python/...``: a scenario's collections take no tags; before,
    the tag was dropped and the node read as plain); ``!!null`` on a value that is not a null (``!!null garbage``
    read as null)."""
    from harness.errors import ScenarioError, one_line

    name = tag.removeprefix("tag:yaml.org,2002:") if tag and tag.startswith("tag:yaml.org,2002:") else None
    if name in {"map", "set", "seq", "omap", "pairs"} and name not in _KIND_TAGS[kind]:
        raise ScenarioError(f"{where}:{line}: yaml: tag !!{name} on {kind}")
    shown = one_line(f"!!{name}" if name else str(tag))[:80]
    if kind in _PLAIN_TAG and tag not in (None, "!", _PLAIN_TAG[kind]):
        raise ScenarioError(f"{where}:{line}: yaml: tag {shown} on {kind} (a scenario's mappings and lists take no "
                            "tags)")
    if name == "null" and value is not None and value not in _NULLS:
        raise ScenarioError(f"{where}:{line}: yaml: tag !!null on {one_line(value)[:60]!r} (only an empty value, ~ or "
                            "null is null)")


_PLAIN_TAG: Final = {"a list": "tag:yaml.org,2002:seq", "a mapping": "tag:yaml.org,2002:map"}
_NULLS: Final = frozenset({"", "~", "null", "Null", "NULL"})
