"""A scan cache for repeated recall: the last ``ScanResult`` is reused while no topic file changed.

``RecallCache`` is a ``DocCache`` (so extraction, dream and the index rebuild share its parsed docs) that also
remembers the last scan and a signature of the files it came from: every topic file's key, ``st_mtime_ns`` and
size. When the signature is unchanged the scan is not redone at all, so a warm call costs one ``stat`` per file.
On a ``FileStore`` the signature comes from ``os.scandir`` directly (no ``pathlib``) and a changed store is
rescanned the same way, reading and parsing only the files whose (mtime, size) changed. Whenever anything is
unusual (an unreadable file, a non-regular file, a listing error, a key the store would refuse) the whole scan is
left to ``memory_core.files.scan.scan``, so the result is always exactly what ``scan(store, cache=...)`` returns.

Derived data that depends only on a file's content (``Derived``: its search haystack, word set, manifest line) is
kept per doc and reused while the doc is unchanged.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field
from typing import Any, Final

from memory_core.files.formats import iso_from_ms, locale_key, ns_to_ms
from memory_core.files.paths import INDEX_FILENAME
from memory_core.files.scan import MAX_SCANNED_MEMORY_FILES, DocCache, DroppedFile, ScanResult, scan, utf8_encodable
from memory_core.files.store import MAX_FILE_BYTES, Store
from memory_core.files.topic import TopicDoc, parse_topic

Signature = list[tuple[str, float, int]]
"""(key, mtime, size) of every topic file in walk order (``st_mtime_ns`` on disk, ``mtime_ms`` otherwise)."""

# bytes that can occur in a query token ([a-z0-9]) stay; other ASCII becomes a separator; UTF-8 bytes of non-ASCII
# characters (>= 0x80) stay too: they never occur in a token, so a token is a substring of the haystack exactly
# when it is a substring of one of these words.
_WORD_BYTES: Final = bytes(c if (97 <= c <= 122 or 48 <= c <= 57 or c >= 128) else 32 for c in range(256))


@dataclass(slots=True)
class Derived:
    """What recall derives from one doc's content, computed once per doc version."""

    doc: TopicDoc
    haystack: bytes
    """``type title description body`` lower-cased, UTF-8: the text the §7.3 substring score searches."""
    _words: frozenset[bytes] | None = None
    _manifest: str | None = None

    @property
    def words(self) -> frozenset[bytes]:
        """The distinct maximal runs of token bytes (a token is in the haystack iff it is inside one of them)."""
        if self._words is None:
            self._words = frozenset(self.haystack.translate(_WORD_BYTES).split())
        return self._words

    @property
    def manifest_line(self) -> str:
        """``- [type] path (ISO mtime): description`` (spec §7.4)."""
        if self._manifest is None:
            d = self.doc
            head = f"- [{d.type}] {d.relative_path} ({iso_from_ms(d.mtime_ms)})"
            self._manifest = f"{head}: {d.description}" if d.description else head
        return self._manifest


def derive(doc: TopicDoc) -> Derived:
    """The derived data of one doc (the haystack is the one ``recall.score_doc`` builds)."""
    text = " ".join((doc.type, doc.title, doc.description, doc.normalized_body)).lower()
    return Derived(doc, text.encode("utf-8", "surrogatepass"))


@dataclass(slots=True)
class RecallCache(DocCache):
    """A ``DocCache`` that also keeps the last scan, its file signature and per-doc derived data for recall."""

    signature: Signature | None = None
    """The files the last scan saw; None when it cannot be trusted (then the next call rescans)."""
    source: object = None
    """The store the last scan read (its root directory for a ``FileStore``)."""
    result: ScanResult | None = None
    """The last scan."""
    derived: dict[str, Derived] = field(default_factory=dict)
    """Derived data by relative path (valid while ``derived[p].doc`` is the scanned doc)."""
    uses: int = 0
    """Recall calls served by ``result`` so far."""
    index: Any = None
    """The query index recall built for ``result`` (owned by ``memory_core.files.recall_index``)."""
    scans: int = 0
    """Full scans done (a signature match does none)."""

    def derive(self, doc: TopicDoc) -> Derived:
        """Derived data of ``doc``, reused while the same doc object is scanned."""
        cached = self.derived.get(doc.relative_path)
        if cached is None or cached.doc is not doc:
            cached = self.derived[doc.relative_path] = derive(doc)
        return cached


def _walk(root: str) -> Signature | None:
    """Every topic file under ``root`` like ``FileStore.list`` + ``stat`` see them, or None on anything unusual."""
    out: Signature = []
    if not os.path.isdir(root):
        return out
    stack = [("", root)]
    while stack:
        prefix, directory = stack.pop()
        try:
            with os.scandir(directory) as it:
                for entry in it:
                    name = entry.name
                    if entry.is_dir():
                        if entry.is_symlink():
                            continue  # os.walk does not follow directory symlinks
                        stack.append((f"{prefix}{name}/", entry.path))
                    elif name.endswith(".md") and name != INDEX_FILENAME:
                        # fix: a file symlink (read here without the store's containment check) and a name that is
                        # not UTF-8 were recalled on this path while scan() refuses or drops them: scan decides both
                        if ("\\" in name or not (name.isascii() or utf8_encodable(name)) or entry.is_symlink()
                                or not entry.is_file()):
                            return None  # scan decides: a key the store refuses, a fifo, a link, a non-UTF-8 name
                        st = entry.stat()
                        out.append((prefix + name, st.st_mtime_ns, st.st_size))
        except OSError:
            return None
    return out


def _store_signature(store: Store) -> Signature | None:
    """The signature through the ``Store`` protocol (any store), or None when a file is missing or refused."""
    out: Signature = []
    try:
        for key in store.list():
            if key.endswith(".md") and posixpath.basename(key) != INDEX_FILENAME:
                st = store.stat(key)
                if st is None:
                    return None
                out.append((key, st.mtime_ms, st.size))
    except (OSError, ValueError):
        return None
    return out


def _order_key(doc: TopicDoc) -> tuple[float, tuple[str, str]]:
    return (-doc.mtime_ms, locale_key(doc.filename))


def _scan_files(root: str, files: Signature, cache: RecallCache) -> ScanResult | None:
    """``scan`` over a walked file list, or None when a file cannot be read (``scan`` then reports it)."""
    docs: list[TopicDoc] = []
    dropped: list[DroppedFile] = []
    entries = cache.entries
    for key, mtime_ns, size in sorted(files):
        mtime_ms = ns_to_ms(int(mtime_ns))
        cached = entries.get(key)
        if cached is not None and cached[0] == mtime_ms and cached[1] == size:
            doc = cached[2]
            cache.hits += 1
        else:
            if size > MAX_FILE_BYTES:  # fix: the fast path read past the store's 1 MiB cap; the store's scan refuses it
                return None
            try:
                with open(os.path.join(root, key), encoding="utf-8", newline="") as handle:
                    text = handle.read()
                doc = parse_topic(text, relative_path=key, mtime_ms=mtime_ms)
            except (OSError, UnicodeDecodeError, ValueError):
                return None
            cache.misses += 1
            entries[key] = (mtime_ms, size, doc)
        if doc is None:
            dropped.append(DroppedFile(key, "not a memory doc"))
        else:
            docs.append(doc)
    docs.sort(key=_order_key)
    return ScanResult(tuple(docs[:MAX_SCANNED_MEMORY_FILES]), tuple(dropped), total_docs=len(docs))


def plain_root(store: Store) -> str | None:
    """The directory ``store`` reads from unaltered (its ``plain_root()``), or None: reads go through the protocol."""
    probe = getattr(store, "plain_root", None)
    root = probe() if callable(probe) else None
    return root if isinstance(root, str) and root else None


def cached_scan(store: Store, cache: RecallCache) -> ScanResult:
    """``scan(store, cache=cache)``, but without rescanning (or re-stat-ing through ``pathlib``) an unchanged store."""
    root = plain_root(store)
    fast = root is not None
    root = root or ""
    source = root if fast else store
    signature = _walk(root) if fast else _store_signature(store)
    if (signature is not None and cache.result is not None and signature == cache.signature
            and (source == cache.source if fast else source is cache.source)):
        return cache.result
    result = _scan_files(root, signature, cache) if fast and signature is not None else None
    if result is None:
        result = scan(store, cache=cache)
    if any(d.reason.startswith("unreadable") for d in result.dropped):
        signature = None  # an unreadable file may become readable without a new mtime: always rescan then
    cache.signature, cache.source, cache.result, cache.uses, cache.index = signature, source, result, 0, None
    live = {d.relative_path for d in result.docs}
    for gone in [p for p in cache.derived if p not in live]:
        del cache.derived[gone]
    cache.scans += 1
    return result
