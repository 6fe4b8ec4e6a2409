"""Harness errors: one root; ``ScenarioError`` carries a ``file:line: field: what was expected`` message."""

from __future__ import annotations


class HarnessError(Exception):
    """Root of every error the harness raises on purpose (the CLI prints it as one line, exit 2)."""


class ScenarioError(HarnessError, ValueError):
    """A scenario file is malformed; the message names the file, line and field."""


class CassetteMiss(HarnessError):
    """Replay met a model call that no cassette entry answers."""


class GateFileError(HarnessError, ValueError):
    """A gates file is malformed."""
