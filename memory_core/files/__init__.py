"""The file-based memory system: a reference port of qwen-code's managed auto-memory (extract, dream, recall,
forget) — a ``MEMORY.md`` index plus typed topic files, the spec the ``qwen-file`` design names.

It uses the shared seams at ``memory_core``'s root (clock, errors, events, model, prompt templates; its own
templates are ``prompts/*.j2`` here) and nothing of the SQLite system.
"""

from memory_core.files.dream import DreamOutcome, DreamScheduler, run_dream
from memory_core.files.entries import Entry, parse_entries, render_entries
from memory_core.files.extract import ExtractOutcome, ExtractRequest, ExtractScheduler, run_extract
from memory_core.files.forget import ForgetOutcome, forget
from memory_core.files.history import ChatMessage, ToolCall
from memory_core.files.index import build_index, rebuild_index, truncate_index_for_prompt
from memory_core.files.paths import MemoryLayout, is_memory_path, memory_root, validate_memory_path
from memory_core.files.recall import RecallOutcome, recall, select_heuristic
from memory_core.files.scan import ScanResult, scan
from memory_core.files.sessions import ChatDirSessions, InMemorySessions
from memory_core.files.store import FileStore, InMemoryStore, Store
from memory_core.files.topic import TopicDoc, parse_topic, render_topic

__all__ = [
    "ChatDirSessions",
    "ChatMessage",
    "DreamOutcome",
    "DreamScheduler",
    "Entry",
    "ExtractOutcome",
    "ExtractRequest",
    "ExtractScheduler",
    "FileStore",
    "ForgetOutcome",
    "InMemorySessions",
    "InMemoryStore",
    "MemoryLayout",
    "RecallOutcome",
    "ScanResult",
    "Store",
    "ToolCall",
    "TopicDoc",
    "build_index",
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
