"""Conversation history as extraction sees it (spec §5.3 transcript, §5.2 memory_tool detection)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from memory_core.files.formats import collapse_ws
from memory_core.files.paths import is_memory_path

WRITE_TOOLS: Final = frozenset({"write_file", "edit", "replace", "create_file"})
PATH_ARGS: Final = ("file_path", "path", "target_file")


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A function call the main agent made."""

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One history message: ``user`` or ``model``, its text parts joined, and its tool calls."""

    role: str
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True, slots=True)
class TranscriptLine:
    """A text-bearing user/model message with its index in the full history."""

    offset: int
    role: str
    text: str


def transcript(history: Sequence[ChatMessage]) -> list[TranscriptLine]:
    """User/model messages with non-empty collapsed text, keeping their full-history offsets (spec §5.3)."""
    lines = []
    for offset, message in enumerate(history):
        text = collapse_ws(message.text)
        if message.role in ("user", "model") and text:
            lines.append(TranscriptLine(offset, message.role, text))
    return lines


def writes_memory(message: ChatMessage, *, root: str) -> bool:
    """Whether a message holds a write-tool call whose first path argument is inside the memory root."""
    for call in message.tool_calls:
        if call.name not in WRITE_TOOLS:
            continue
        target = next((call.args[k] for k in PATH_ARGS if call.args.get(k) is not None), None)
        if isinstance(target, str) and is_memory_path(target, root):
            return True
    return False
