"""``python -m harness`` is ``memharness``."""

from harness.cli import entry

entry()
