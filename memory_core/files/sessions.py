"""Where dream's session gate counts sessions (spec §6.2 default session scanner)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Protocol

from memory_core.files.formats import ns_to_ms

SESSION_FILE: Final = re.compile(r"^[0-9a-fA-F-]{32,36}\.jsonl$")


class SessionSource(Protocol):
    """Lists session ids touched after a moment."""

    def sessions_since(self, since_ms: float, *, exclude: str) -> list[str]:
        """Ids of sessions whose transcript changed strictly after ``since_ms``, minus ``exclude``."""
        ...


@dataclass(frozen=True, slots=True)
class ChatDirSessions:
    """The real scanner: ``<project dir>/chats/<uuid>.jsonl`` files by mtime; listing errors give ``[]``."""

    chats_dir: Path

    def sessions_since(self, since_ms: float, *, exclude: str) -> list[str]:
        """Session ids (file stems) with mtime > ``since_ms``."""
        try:
            names = os.listdir(self.chats_dir)
        except OSError:
            return []
        out = []
        for name in sorted(names):
            sid = name.removesuffix(".jsonl")
            if not SESSION_FILE.match(name) or sid == exclude:
                continue
            try:
                mtime_ms = ns_to_ms((self.chats_dir / name).stat().st_mtime_ns)
            except OSError:
                continue
            if mtime_ms > since_ms:
                out.append(sid)
        return out


@dataclass(slots=True)
class InMemorySessions:
    """The twin: session id → last-touched epoch milliseconds."""

    touched: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, touched: Mapping[str, float]) -> InMemorySessions:
        """Sessions from a mapping."""
        return cls(dict(touched))

    def sessions_since(self, since_ms: float, *, exclude: str) -> list[str]:
        """Ids touched after ``since_ms``."""
        return sorted(s for s, t in self.touched.items() if t > since_ms and s != exclude)
