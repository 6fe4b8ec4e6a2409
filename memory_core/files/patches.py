"""Extraction patches: filters, the heuristic extractor and topic classification (spec §5.5, legacy).

Pure: text in, patches out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from memory_core.files.formats import collapse_ws
from memory_core.files.topic import MemoryType

MIN_CANDIDATE_LENGTH: Final = 12
TRANSIENT: Final = re.compile(
    r"\b(today|now|currently|for this task|this session|temporary|temporarily)\b", re.IGNORECASE
)
_LEADING_BULLET: Final = re.compile(r"^[-*]\s*")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_REMEMBER: Final = re.compile(r"^(?:please\s+)?(?:remember|save|note)\s+(?:that\s+)?(.+)$", re.IGNORECASE | re.DOTALL)
_PREFERENCE: Final = re.compile(r"\b(i|we)\s+(prefer|like|need|want)\b|\bmy\s+(preferred|favorite)\b", re.IGNORECASE)
_URL: Final = re.compile(r"https?://\S+", re.IGNORECASE)
_KEEP_KEYWORD: Final = re.compile(
    r"\b(grafana|dashboard|runbook|ticket|docs?|wiki|notion|jira|release|deadline|freeze|incident)\b", re.IGNORECASE
)
_IMPERATIVE: Final = re.compile(r"\b(please|always|never|avoid|respond)\b", re.IGNORECASE)
_CLASSES: Final[tuple[tuple[MemoryType, re.Pattern[str]], ...]] = (
    ("reference", re.compile(r"https?://\S+|\b(grafana|dashboard|runbook|ticket|docs?|wiki|notion|jira)\b", re.I)),
    ("user", _PREFERENCE),
    ("feedback", re.compile(r"\b(please|always|never|avoid|respond|format|style|terse|concise|detailed)\b", re.I)),
    ("project", re.compile(
        r"\b(project|repo|repository|service|release|deadline|freeze|incident|environment|stack)\b", re.I
    )),
)


@dataclass(frozen=True, slots=True)
class Patch:
    """One durable fact to save."""

    topic: MemoryType
    summary: str
    why: str | None = None
    how_to_apply: str | None = None
    source_offset: int = 0
    """Index of the history message it came from."""

    @property
    def dedupe_key(self) -> str:
        """``topic:summary-lower-cased``; the first patch with a key wins (spec §5.5)."""
        return f"{self.topic}:{self.summary.lower()}"


def rejection_reason(summary: str) -> str | None:
    """Why a candidate summary is dropped: ``too_short``, ``question``, ``transient``; None when kept."""
    if len(summary) < MIN_CANDIDATE_LENGTH:
        return "too_short"
    if summary.endswith("?"):
        return "question"
    if TRANSIENT.search(summary):
        return "transient"
    return None


def scrub(text: str) -> str:
    """``text`` with lone surrogates (which no file can hold) replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def normalize_patch(patch: Patch) -> Patch | None:
    """Strip a leading bullet, collapse whitespace, apply the filters (spec §5.5 ``normalizeExtractPatch``).

    Lone surrogates (from a chat message) become U+FFFD, so the patch can always be written.
    """
    summary = collapse_ws(_LEADING_BULLET.sub("", scrub(patch.summary).strip(), count=1))
    if rejection_reason(summary) is not None:
        return None
    why = collapse_ws(scrub(patch.why)) if patch.why else None
    how = collapse_ws(scrub(patch.how_to_apply)) if patch.how_to_apply else None
    return Patch(patch.topic, summary, why or None, how or None, patch.source_offset)


def classify(text: str) -> MemoryType | None:
    """The first matching class of reference, user, feedback, project; None drops the message."""
    for topic, pattern in _CLASSES:
        if pattern.search(text):
            return topic
    return None


def candidate_summary(message: str) -> str | None:
    """The summary a user message contributes, or None (spec §5.5 heuristic extractor)."""
    text = collapse_ws(message)
    if rejection_reason(text) is not None:
        return None
    if m := _REMEMBER.match(text):
        return m.group(1).lstrip(":- \t")
    if _PREFERENCE.search(text) or _URL.search(text) or _KEEP_KEYWORD.search(text) or _IMPERATIVE.search(text):
        return text
    return None


def extract_heuristic(messages: Iterable[tuple[int, str]]) -> list[Patch]:
    """Patches from ``(offset, user text)`` pairs: candidate, classify, normalise, dedupe."""
    patches: list[Patch] = []
    for offset, text in messages:
        summary = candidate_summary(text)
        topic = classify(summary) if summary else None
        if summary and topic:
            patches.append(Patch(topic, summary, source_offset=offset))
    return dedupe_patches(patches)


def dedupe_patches(patches: Iterable[Patch]) -> list[Patch]:
    """Normalise each patch and keep the first per dedupe key."""
    seen: dict[str, Patch] = {}
    for raw in patches:
        patch = normalize_patch(raw)
        if patch is not None:
            seen.setdefault(patch.dedupe_key, patch)
    return list(seen.values())
