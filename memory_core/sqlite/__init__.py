"""The SQLite + FTS5 memory ("memory v2", OpenAkita) as a second reference system (spec s1-sqlite-memory-spec.md).

It imports nothing from the file core's store, topic, index or scan modules; it shares only the clock, the model
seam, errors and events. ``Quirks.seed()`` reproduces the seed, bugs included; ``Quirks.fixed()`` is the intent.
"""

from memory_core.sqlite.db import Database, SqliteMemoryError
from memory_core.sqlite.memory import CAPABILITIES, Document, DreamResult, ForgetResult, RecallResult, SqliteMemory
from memory_core.sqlite.quirks import Quirks
from memory_core.sqlite.retrieval import Candidate
from memory_core.sqlite.session import ExtractResult, Turn

__all__ = [
    "CAPABILITIES",
    "Candidate",
    "Database",
    "Document",
    "DreamResult",
    "ExtractResult",
    "ForgetResult",
    "Quirks",
    "RecallResult",
    "SqliteMemory",
    "SqliteMemoryError",
    "Turn",
]
