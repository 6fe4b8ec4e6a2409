"""The shipped memory systems, side by side, each adapted onto the protocol of ``harness.system``.

    harness/systems/
      files.py          the file-based system (``memory_core.files``, design ``qwen-file``): ``ReferenceSystem``
      faulty_store.py   its store with injected I/O faults (a scenario's ``fault`` steps)
      store_watch.py    a store deleted or replaced while a scenario runs: a failed result naming it
      sqlite.py         the SQLite system (``memory_core.sqlite``, design ``s1-sqlite``): ``SqliteSystem``
      sqlite_checks.py  the SQLite adapter's ``check: {system: {...}}`` keys
      mem0ai.py         mem0 (PyPI ``mem0ai``, optional extra ``mem0``) behind the model proxy: ``Mem0System``

Each adapter imports the public protocol (``harness.system``), public harness names (``harness.errors``,
``harness.scenario``) and its own memory core, nothing private of the harness. ``memharness run --system NAME``
resolves a shipped system by the name in ``SYSTEMS``; the adapters load only when a run asks for them.
"""

from __future__ import annotations

SYSTEMS: dict[str, str] = {
    "reference": "harness.systems.files:factory_for",
    "sqlite": "harness.systems.sqlite:factory_for",
    "mem0": "harness.systems.mem0ai:factory",
}
"""Built-in systems by name. ``NAME`` or ``NAME:VARIANT`` (e.g. ``sqlite:seed``); a built-in whose entry ends in
``factory_for`` takes the variant (``factory_for(variant) -> factory``)."""
SHIPPED_DESIGNS: dict[str, str] = {"reference": "qwen-file", "sqlite": "s1-sqlite"}  # = each one's ``design``
OPT_IN: frozenset[str] = frozenset({"mem0"})
"""Shipped systems a run replays only when ``--system`` names them: they need an optional extra (``mem0``)."""
DEFAULT_SYSTEMS: tuple[str, ...] = tuple(n for n in SYSTEMS if n not in OPT_IN)
"""What a run without ``--system`` replays."""
SEED_FIELDS: dict[str, frozenset[str]] = {
    "reference": frozenset({"special", "to"}),
    "sqlite": frozenset({"importance", "subject", "predicate", "priority", "duration", "expires_in", "id", "via",
                         "queue", "access_count"}),
}
"""The ``memories[].system`` fields each shipped system reads (the adapters' docstrings say what each does). A
system ignores the fields of another shipped system (a portable scenario may carry them for it) and refuses a
field no shipped system reads (a typo is never passed in silence)."""
ALL_SYSTEMS: str = "all"
"""``memharness run --system all``: every shipped system, the opt-in ones too, side by side in one report."""

__all__ = ["ALL_SYSTEMS", "DEFAULT_SYSTEMS", "OPT_IN", "SEED_FIELDS", "SHIPPED_DESIGNS", "SYSTEMS"]
