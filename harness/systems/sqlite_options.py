"""The SQLite adapter's round-20b guards on what crosses it: a model's text reported in a recall's ``details``, and
the ``memory_type`` option of a recall or forget (kept apart: the adapter stays within its 200 lines)."""

from __future__ import annotations

from harness.errors import ScenarioInputError
from memory_core.sqlite.extraction import TYPES as MEMORY_TYPES
from memory_core.sqlite.memory import TYPE_ALIASES


def detail(text: str) -> str:
    """A model's text as a ``details`` value: a NUL (which the protocol refuses there) written as ``\\x00``. Round
    20b: a decomposition keyword holding one (a JSON ``\\u0000``) failed the shipped system's scenario."""
    return text.replace("\x00", "\\x00")


def memory_type(value: object, step: str) -> str:
    """A recall or forget ``memory_type`` option as the type its rows hold: one of the port's types (spec §2.1), or a
    file-core type the seeding maps onto one (``project`` → ``fact``), any case. Round 20b: a typo (``factz``) or a
    file-core name was taken as given and matched no row, so a ``forbid`` or an empty forget held in silence."""
    if not isinstance(value, str):
        raise ScenarioInputError(f"{step} option memory_type: expected a type name, got {value!r:.60}")
    kind = TYPE_ALIASES.get(value.lower(), value.lower())
    if kind not in MEMORY_TYPES:
        raise ScenarioInputError(f"{step} option memory_type: expected one of {', '.join(MEMORY_TYPES)} (or "
                                 f"{', '.join(TYPE_ALIASES)}), got {value!r:.60}")
    return kind
