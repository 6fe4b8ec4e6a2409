"""memory_core — a reference port of qwen-code's managed auto-memory (extract, dream, recall, forget).

File-based: a ``MEMORY.md`` index plus typed topic files. Side effects arrive through small protocols
(``Store``, ``Clock``, ``Model``, ``SessionSource``, ``EventSink``) that each have an in-memory twin.
"""

from memory_core.clock import Clock, FixedClock, SystemClock
from memory_core.dream import DreamOutcome, DreamScheduler, run_dream
from memory_core.entries import Entry, parse_entries, render_entries
from memory_core.errors import MemoryCoreError, ModelError, StoreError, UnsafePathError, describe_error
from memory_core.events import EventSink, ListSink, NullSink
from memory_core.extract import ExtractOutcome, ExtractRequest, ExtractScheduler, run_extract
from memory_core.forget import ForgetOutcome, forget
from memory_core.history import ChatMessage, ToolCall
from memory_core.index import build_index, rebuild_index, truncate_index_for_prompt
from memory_core.model import Model, ModelReply, ModelRequest, ScriptedModel, checked_data, fallback_reason
from memory_core.paths import MemoryLayout, is_memory_path, memory_root, validate_memory_path
from memory_core.recall import RecallOutcome, recall, select_heuristic
from memory_core.scan import ScanResult, scan
from memory_core.sessions import ChatDirSessions, InMemorySessions
from memory_core.store import FileStore, InMemoryStore, Store
from memory_core.topic import TopicDoc, parse_topic, render_topic

__all__ = [
    "ChatDirSessions",
    "ChatMessage",
    "Clock",
    "DreamOutcome",
    "DreamScheduler",
    "Entry",
    "EventSink",
    "ExtractOutcome",
    "ExtractRequest",
    "ExtractScheduler",
    "FileStore",
    "FixedClock",
    "ForgetOutcome",
    "InMemorySessions",
    "InMemoryStore",
    "ListSink",
    "MemoryCoreError",
    "MemoryLayout",
    "Model",
    "ModelError",
    "ModelReply",
    "ModelRequest",
    "NullSink",
    "RecallOutcome",
    "ScanResult",
    "ScriptedModel",
    "Store",
    "StoreError",
    "SystemClock",
    "ToolCall",
    "TopicDoc",
    "UnsafePathError",
    "build_index",
    "checked_data",
    "describe_error",
    "fallback_reason",
    "forget",
    "is_memory_path",
    "memory_root",
    "parse_entries",
    "parse_topic",
    "rebuild_index",
    "recall",
    "render_entries",
    "render_topic",
    "run_dream",
    "run_extract",
    "scan",
    "select_heuristic",
    "truncate_index_for_prompt",
    "validate_memory_path",
]
