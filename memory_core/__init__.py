"""memory_core — two memory systems side by side, on shared seams.

Layout::

    memory_core/
      clock.py errors.py events.py     the seams both systems use: the injected clock, the error types,
      model.py litellm_model.py        the event sink, the model protocol (scripted and litellm-backed)
      prompts.py                       and the versioned ``*.j2`` template loader (each system has its own
                                       ``prompts/`` directory; versions are ``<name>@<sha12>``)
      files/                           the file-based system: a reference port of qwen-code's managed
                                       auto-memory (``MEMORY.md`` index plus typed topic files; the qwen spec)
      sqlite/                          the SQLite system (the S1 spec; ``sqlite/README.md``)

Each system reaches side effects only through small protocols (``Store``, ``Clock``, ``Model``, ``SessionSource``,
``EventSink``) that each have an in-memory twin. The harness adapts both onto its system protocol
(``harness.system``; the adapters are ``harness.systems.files`` and ``harness.systems.sqlite``).
"""

from memory_core.clock import Clock, FixedClock, SystemClock
from memory_core.errors import MemoryCoreError, ModelError, StoreError, UnsafePathError, describe_error
from memory_core.events import EventSink, ListSink, NullSink
from memory_core.model import Model, ModelReply, ModelRequest, ScriptedModel, checked_data, fallback_reason

__all__ = [
    "Clock",
    "EventSink",
    "FixedClock",
    "ListSink",
    "MemoryCoreError",
    "Model",
    "ModelError",
    "ModelReply",
    "ModelRequest",
    "NullSink",
    "ScriptedModel",
    "StoreError",
    "SystemClock",
    "UnsafePathError",
    "checked_data",
    "describe_error",
    "fallback_reason",
]
