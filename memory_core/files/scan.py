"""Scan the memory root for topic docs (spec §3), tolerant of broken files and cached by (path, mtime, size)."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Final

from memory_core.files.formats import locale_key
from memory_core.files.paths import INDEX_FILENAME
from memory_core.files.store import Listing, Store
from memory_core.files.topic import TopicDoc, parse_topic

MAX_SCANNED_MEMORY_FILES: Final = 200
NOT_A_DOC: Final = "not a memory doc"
MAX_FRONTMATTER_CHARS: Final = 16 * 1024
"""A topic file whose frontmatter is longer is skipped (with a warning) before any YAML parsing: YAML is parsed
in pure Python, and a huge or deeply nested frontmatter would take many seconds. Upstream reads only the first
30 lines of a file for its frontmatter; 16 KiB is far beyond any real one."""


def _parse(text: str, key: str, mtime_ms: float) -> TopicDoc | None:
    if text.startswith("---\n"):
        end = text.find("\n---", 3)
        size = end if end >= 0 else len(text)
        if size > MAX_FRONTMATTER_CHARS:
            raise ValueError(f"frontmatter of {size} characters, over the {MAX_FRONTMATTER_CHARS}-character limit")
    return parse_topic(text, relative_path=key, mtime_ms=mtime_ms)


def printable_key(key: str) -> str:
    """A key as text that always encodes: bytes of a non-UTF-8 file name are shown as ``\\xNN``."""
    return key.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace") if not utf8_encodable(key) else key


def utf8_encodable(key: str) -> bool:
    """Whether a key is valid Unicode text (a non-UTF-8 file name arrives with lone surrogates from os.walk)."""
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class ScanResult:
    """What a scan found: up to 200 docs, most recent first, and what it had to drop."""

    docs: tuple[TopicDoc, ...]
    """Parsed docs in recency order, capped at 200."""
    dropped: tuple[DroppedFile, ...] = ()
    """Files skipped: unreadable ones (fix: spec §12), ones that are no memory doc (spec §3), and folders that could
    not be listed (their key ends in ``/``)."""
    total_docs: int = 0
    """Docs found before the 200 cap."""

    @property
    def warnings(self) -> tuple[str, ...]:
        """One line per file skipped because it could not be read safely (symlink out of the root, FIFO, device,
        oversized, not UTF-8, non-UTF-8 name), naming the file; operations put these in their warning events."""
        return tuple(f"{d.relative_path}: skipped ({d.reason})" for d in self.dropped if d.reason != NOT_A_DOC)


@dataclass(frozen=True, slots=True)
class DroppedFile:
    """A ``.md`` file the scan could not use: its key, and why (``unreadable: <error>`` or ``not a memory doc``)."""

    relative_path: str
    reason: str


@dataclass(slots=True)
class DocCache:
    """Parsed docs keyed by (path, mtime, size), so unchanged files are not re-parsed."""

    entries: dict[str, tuple[float, int, TopicDoc | None]] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0


def store_listing(store: Store) -> Listing:
    """The store's ``listing()`` when it has one (``FileStore`` and wrappers of it), else its ``list()``."""
    listing = getattr(store, "listing", None)
    return listing() if callable(listing) else Listing(store.list())


def _order_key(doc: TopicDoc) -> tuple[float, tuple[str, str]]:
    return (-doc.mtime_ms, locale_key(doc.filename))


def scan(store: Store, *, cache: DocCache | None = None, limit: int | None = MAX_SCANNED_MEMORY_FILES) -> ScanResult:
    """List, read and parse every topic file; order by mtime desc then filename; keep 200 (spec §3).

    ``limit=None`` keeps every doc (for tools that inspect the whole store, not for the spec's operations).

    fix: spec §12 — upstream rejects the whole scan when one file cannot be read; here that file is skipped
    and reported in ``dropped``, and the rest of the memory still works.
    """
    listing = store_listing(store)
    keys = [k for k in listing.keys if k.endswith(".md") and posixpath.basename(k) != INDEX_FILENAME]
    docs: list[TopicDoc] = []
    dropped = [DroppedFile(printable_key(folder), why) for folder, why in listing.unlisted]
    for key in keys:
        if not utf8_encodable(key):
            # fix: a non-UTF-8 file name would break every later write of its path (index, prompts): skipped
            dropped.append(DroppedFile(printable_key(key), "unreadable: file name is not UTF-8"))
            continue
        try:
            stat = store.stat(key)
            if stat is None:
                raise FileNotFoundError(key)
            cached = cache.entries.get(key) if cache is not None else None
            if cached is not None and cached[0] == stat.mtime_ms and cached[1] == stat.size:
                doc = cached[2]
                if cache is not None:
                    cache.hits += 1
            else:
                doc = _parse(store.read(key), key, stat.mtime_ms)
                if cache is not None:
                    cache.misses += 1
                    cache.entries[key] = (stat.mtime_ms, stat.size, doc)
        except (OSError, ValueError, RecursionError, MemoryError) as exc:
            dropped.append(DroppedFile(key, f"unreadable: {type(exc).__name__}: {exc}"))
            continue
        if doc is None:
            dropped.append(DroppedFile(key, NOT_A_DOC))
        else:
            docs.append(doc)
    docs.sort(key=_order_key)
    return ScanResult(tuple(docs[:limit]), tuple(dropped), total_docs=len(docs))
