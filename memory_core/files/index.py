"""The ``MEMORY.md`` index: build with caps (spec §4.1), rebuild (§4.2), load-time truncation (§4.3).

All lengths are JS string lengths (UTF-16 code units), as upstream counts them (parity, spec §12).

fix: spec §4.1 — upstream pastes name, description and path into the line as they are, so a newline (or CR, NEL,
U+2028/2029), a ``](`` or a file name holding such characters forged extra ``MEMORY.md`` lines and links out of
the root. ``index_line`` is the one place a line is built, and it sanitises whatever the source (frontmatter, a
model summary, a file name): one line per doc, one link, and that link stays inside the root.
"""

from __future__ import annotations

import contextlib
import functools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Final

from memory_core.files.formats import js_len, js_slice
from memory_core.files.scan import DocCache, ScanResult, scan
from memory_core.files.store import INDEX_DIRTY_KEY, INDEX_KEY, Store
from memory_core.files.topic import TopicDoc

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


_TEXT_MAP: Final = {ord("["): "(", ord("]"): ")", ord("`"): "'", ord("<"): "\u2039"}
_BIDI: Final = frozenset(range(0x202A, 0x202F)) | frozenset(range(0x2066, 0x206A))
_PATH_SAFE_PUNCT: Final = frozenset("-._~/!$&'*+,;=:@")
_MAX_FIELD_CHARS: Final = 400
_PLAIN_PATH: Final = re.compile(r"[A-Za-z0-9\-._~/!$&'*+,;=:@]*")
"""ASCII letters, digits and ``_PATH_SAFE_PUNCT``: what ``index_target`` keeps as it is."""


def _line_safe(text: str) -> str:
    """Text that cannot end the line, open or close a link, a code span or an HTML tag.

    Control characters and line/paragraph separators become spaces, ``[``/``]`` become ``(``/``)``, a backtick
    ``'``, ``<`` ``‹``; bidi overrides are dropped and lone surrogates become U+FFFD.
    """
    text = text[:_MAX_FIELD_CHARS]
    if text.isascii() and text.isprintable():  # no control, separator, bidi or surrogate character: nothing to drop
        return text.translate(_TEXT_MAP)
    out: list[str] = []
    for ch in text:
        cat = unicodedata.category(ch)
        if cat in ("Cc", "Zl", "Zp"):
            out.append(" ")
        elif cat == "Cs":
            out.append("\ufffd")
        elif ord(ch) in _BIDI:
            continue
        else:
            out.append(ch)
    return "".join(out).translate(_TEXT_MAP)


def _encode_char(ch: str) -> str:
    raw = ch.encode("utf-8", "surrogateescape") if 0xDC80 <= ord(ch) <= 0xDCFF else ch.encode("utf-8", "replace")
    return "".join(f"%{b:02X}" for b in raw)


def index_target(relative_path: str) -> str:
    """The link target of a doc: its relative path, percent-encoding anything that is not a plain path character
    (whitespace, controls, brackets, parentheses, ``<>``, ``%#?``, backticks, backslashes, non-UTF-8 name bytes),
    dropping ``.``/``..``/empty segments (and so a leading ``/``), and prefixing a scheme-like first segment with
    ``./``: the target, percent-decoded or not, always names a path inside the root."""
    if _PLAIN_PATH.fullmatch(relative_path):  # every character is a plain path character: nothing to encode
        encoded = relative_path
    else:
        encoded = "".join(ch if ch in _PATH_SAFE_PUNCT or (ch.isalnum() and unicodedata.category(ch)[0] in "LN")
                          else _encode_char(ch) for ch in relative_path)
    segments = [seg for seg in encoded.split("/") if seg not in ("", ".", "..")]
    target = "/".join(segments) or "MEMORY.md"
    if segments and ":" in segments[0]:
        return f"./{target}"  # ``javascript:x.md`` is a file here, never a URL scheme
    return target


def index_line(doc: TopicDoc) -> str:
    """``- [title](path) — description-or-type``, capped at 150 UTF-16 units with ``…``, sanitised (see above).

    fix: spec §4.1 — the cap never cuts the link: when ``- [title](path)`` alone is over 149 units the title is
    shortened instead (and a path longer than the cap keeps the line over it, whole).
    """
    return _index_line(doc.title, doc.description or doc.type, doc.relative_path, MAX_INDEX_LINE_CHARS)


@functools.lru_cache(maxsize=4096)
def _index_line(title_text: str, rest_text: str, relative_path: str, _cap: int) -> str:
    """``index_line`` of its inputs, cached: the index is rebuilt after every write, mostly from unchanged docs.
    ``_cap`` is the line cap as it is at the call, in the key only, so a changed cap never reuses a line."""
    title = _line_safe(title_text).replace("\\", "\\\\")
    rest = _line_safe(rest_text)
    target = index_target(relative_path)
    line = f"- [{title}]({target}) \u2014 {rest}"
    if js_len(line) <= MAX_INDEX_LINE_CHARS:
        return line
    if js_len(f"- [{title}]({target})") <= MAX_INDEX_LINE_CHARS - 1:
        return js_slice(line, MAX_INDEX_LINE_CHARS - 1).rstrip() + "\u2026"
    room = MAX_INDEX_LINE_CHARS - 1 - js_len(f"- []({target})") - 1
    short = js_slice(title, room).rstrip() if room > 0 else ""
    return f"- [{short}\u2026]({target})"


def _cut_to_size(text: str) -> str:
    """Cut before the last newline at or before 25,000 units, or hard-cut there (spec §4.1)."""
    limit_prefix = js_slice(text, MAX_INDEX_CHARS + 1)
    cut = limit_prefix.rfind("\n")
    return text[:cut] if cut > 0 else js_slice(text, MAX_INDEX_CHARS)


def build_index(docs: Sequence[TopicDoc], *, kept: Sequence[str] = ()) -> IndexBuild:
    """One line per doc in scan order, then the ``kept`` lines; 200-line cap; 25,000-unit cap; warning when cut
    (spec §4.1)."""
    lines = [index_line(d) for d in docs]
    lines += [line for line in kept if line not in lines]
    truncated = len(lines) > MAX_INDEX_LINES
    text = "\n".join(lines[:MAX_INDEX_LINES])
    if js_len(text) > MAX_INDEX_CHARS:
        text = _cut_to_size(text)
        truncated = True
    return IndexBuild(text + WRITE_WARNING if truncated else text, truncated)


_LINK_TARGET: Final = re.compile(r"- \[[^\[\]\n]*\]\(([^()\s]+)\)")
"""The link target of an ``index_line`` (its title holds no brackets, its target no parentheses or spaces)."""


def kept_lines(store: Store, result: ScanResult) -> list[str]:
    """The lines of the current ``MEMORY.md`` that point at files the scan could not read, or into folders it could
    not list: those files are still there, so their lines stay (in their old order, after the rebuilt ones).

    fix: the rebuild dropped them, and the index lost a memory whenever a file or folder was briefly unreadable."""
    lost = [d.relative_path for d in result.dropped if d.reason.startswith("unreadable")]
    if not lost:
        return []
    files = {index_target(k) for k in lost if not k.endswith("/")}
    folders = tuple(index_target(k) + "/" for k in lost if k.endswith("/"))
    try:
        old = store.read(INDEX_KEY)
    except (OSError, ValueError):
        return []
    kept: list[str] = []
    for line in old.split("\n"):
        match = _LINK_TARGET.match(line)
        if match and (match.group(1) in files or match.group(1).startswith(folders)) and line not in kept:
            kept.append(line)
    return kept


def rebuild_index(store: Store, *, cache: DocCache | None = None) -> IndexBuild:
    """Scan, build and overwrite ``MEMORY.md`` (spec §4.2), keeping the lines of files it could not read (see
    ``kept_lines``); clears the stale-index marker."""
    result = scan(store, cache=cache)
    built = build_index(result.docs, kept=kept_lines(store, result))
    store.write(INDEX_KEY, built.text)
    with contextlib.suppress(OSError):
        store.delete(INDEX_DIRTY_KEY)
    return built


def mark_index_dirty(store: Store) -> None:
    """Record that topic files are about to change; ``rebuild_index`` clears it. A crash in between leaves the
    marker, and ``repair_stale_index`` then rebuilds the index the crash left stale."""
    if store.stat(INDEX_DIRTY_KEY) is None:
        store.write(INDEX_DIRTY_KEY, "")


def repair_stale_index(store: Store, *, cache: DocCache | None = None) -> bool:
    """Rebuild ``MEMORY.md`` when a previous operation stopped between its topic writes and its index rebuild
    (the marker of ``mark_index_dirty`` is there); True when it did."""
    if store.stat(INDEX_DIRTY_KEY) is None:
        return False
    rebuild_index(store, cache=cache)
    return True


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
