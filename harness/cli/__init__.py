"""Stage 6 — the ``memharness`` command line: parses arguments and calls stage functions."""

from harness.cli._commands import main
from harness.cli._parser import build_parser

__all__ = ["build_parser", "main"]
