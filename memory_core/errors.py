"""Error types of the memory core. One root; subclasses only where callers catch them."""

from __future__ import annotations


class MemoryCoreError(Exception):
    """Root of every error the memory core raises on purpose."""


class UnsafePathError(MemoryCoreError, ValueError):
    """A memory path is unsafe: relative, near-root, a drive root, UNC, NUL byte, home or above, or escapes."""


class StoreError(MemoryCoreError, OSError):
    """A store operation failed (I/O, or a malformed state file)."""


class ModelError(MemoryCoreError):
    """A model side-query failed or returned something the spec's validation rejects.

    ``reason`` is a short machine-readable tag (``timeout``, ``invalid_json``, ``schema``, ``unknown_path``,
    ``too_many``, ``unknown_id``, ``provider``, ``unrecorded``) that telemetry and probes report as the fallback cause.
    """

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class ExtractionError(MemoryCoreError):
    """Extraction could not run (for example a corrupt cursor file, spec §1.8)."""
