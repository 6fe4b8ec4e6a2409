"""Error types of the memory core. One root; subclasses only where callers catch them."""

from __future__ import annotations


class MemoryCoreError(Exception):
    """Root of every error the memory core raises on purpose."""


class UnsafePathError(MemoryCoreError, ValueError):
    """A memory path is unsafe: relative, near-root, a drive root, UNC, NUL byte, home or above, or escapes.

    ``reason`` is a short tag: ``nul``, ``unc``, ``drive_root``, ``url``, ``home_or_above``, ``relative``,
    ``too_short``, ``bad_key``, ``outside_root``, ``symlink_escape`` (``unsafe_path`` when not given).
    """

    def __init__(self, message: str, *, reason: str = "unsafe_path") -> None:
        super().__init__(message)
        self.reason = reason


class StoreError(MemoryCoreError, OSError):
    """A store operation failed (I/O, or a malformed state file)."""


class ModelError(MemoryCoreError):
    """A model side-query failed or returned something the spec's validation rejects.

    ``reason`` is a short machine-readable tag that telemetry and probes report as the fallback cause:
    ``timeout``, ``invalid_json``, ``schema``, ``unknown_path``, ``too_many``, ``unknown_id``, ``provider``,
    ``unrecorded``, ``script``; and, for an exception that is no ``ModelError`` (see ``model.fallback_reason``),
    ``connection`` (``ConnectionError``) or ``exception`` (anything else).
    """

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class ReplayAborted(MemoryCoreError):
    """Raised by a model seam that must not be answered by the heuristic: an evaluation harness replaying recorded
    answers has none for this call. The core's fallback and never-raise promises let it through on purpose — a
    silent fallback would turn "this run is incomplete" into "the model did worse"."""


class ExtractionError(MemoryCoreError):
    """Extraction could not run (for example a corrupt cursor file, spec §1.8)."""


def describe_error(exc: BaseException) -> str:
    """One line for a failed operation: the exception type and message (which names the file for store and
    state-file errors), newlines folded, at most 300 characters."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")  # lone surrogates never reach telemetry
    return text if len(text) <= 300 else text[:299] + "\u2026"
