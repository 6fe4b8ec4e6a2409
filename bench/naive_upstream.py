"""A naive reimplementation of upstream's recall (spec §3, §7): every call re-lists, re-reads and re-parses every
topic file with the YAML parser, then scores (§7.3) and builds the prompt block (§7.5). No cache of any kind.

It is the baseline the recall benchmark compares against; it returns the same selection as ``memory_core.files.recall``.
"""

from __future__ import annotations

import os
import re
from datetime import datetime
from typing import Final

import yaml
from frontmatter.default_handlers import YAMLHandler

from memory_core.files.recall import build_recall_prompt, select_heuristic
from memory_core.files.topic import MEMORY_TYPES, TopicDoc

_FRONTMATTER: Final = re.compile(r"^---\n([\s\S]*?)\n---\n?([\s\S]*)\Z")
_YAML: Final = YAMLHandler()


def _field(data: dict[object, object], frontmatter: str, key: str) -> str | None:
    value = data.get(key)
    if isinstance(value, str):
        return value.strip()
    if value is None and key in data:
        return None
    m = re.search(rf"^{re.escape(key)}:\s*(.+)$", frontmatter, re.MULTILINE)
    return m.group(1).strip() if m else None


def _parse(text: str, key: str, mtime_ms: float) -> TopicDoc | None:
    m = _FRONTMATTER.match(text)
    if m is None:
        return None
    try:
        loaded = _YAML.load(m.group(1))
    except yaml.YAMLError:
        loaded = None
    data = loaded if isinstance(loaded, dict) else {}
    kind = _field(data, m.group(1), "type")
    if kind not in MEMORY_TYPES:
        return None
    title = _field(data, m.group(1), "name") or _field(data, m.group(1), "title") or kind
    return TopicDoc(kind, key, title, _field(data, m.group(1), "description") or "",
                    m.group(2).strip(), mtime_ms, m.group(1))


def scan_naive(root: str) -> list[TopicDoc]:
    """Walk, read and parse every ``.md`` topic file; most recent first; keep 200 (spec §3)."""
    docs: list[TopicDoc] = []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            if not name.endswith(".md") or name == "MEMORY.md":
                continue
            path = os.path.join(dirpath, name)
            key = os.path.relpath(path, root).replace(os.sep, "/")
            try:
                with open(path, encoding="utf-8", newline="") as handle:
                    text = handle.read()
                doc = _parse(text, key, os.stat(path).st_mtime_ns / 1e6)
            except (OSError, UnicodeDecodeError, ValueError):
                continue
            if doc is not None:
                docs.append(doc)
    docs.sort(key=lambda d: (-d.mtime_ms, d.filename.casefold(), d.filename))
    return docs[:200]


def recall_naive(root: str, query: str, *, now: datetime, limit: int = 5) -> tuple[str, list[TopicDoc]]:
    """The prompt block and the selected docs, recomputed from the files."""
    selected = select_heuristic(query, scan_naive(root), limit=limit)
    return build_recall_prompt(selected, now=now), selected
