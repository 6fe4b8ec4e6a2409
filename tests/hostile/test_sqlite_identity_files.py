"""The SQLite memory's identity files (``MEMORY.md``, ``USER.md``, written by dream and forget) where they cannot
be written (hostile probe, round 11: a read-only identity directory, as a non-root user).

Before: ``dream`` and ``forget`` raised the raw ``PermissionError`` (or ``NotADirectoryError``, ``IsADirectoryError``)
after their database writes. Now that is ``SqliteMemoryError`` on one line naming the file (the port's documented
failure), and what the database committed before it stays (forget's deletions are kept). Root ignores file modes, so
the generated obstacles are ones that stop root too: the identity directory (or a directory above it) is a file, or
``MEMORY.md``, ``USER.md`` or ``MEMORY.md.bak`` is a directory.
"""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_core.clock import FixedClock
from memory_core.sqlite import SqliteMemory, SqliteMemoryError
from tests.hostile.harness import within
from tests.sqlite.conftest import T0, scratch

EXAMPLES = int(os.environ.get("MEMHARNESS_HOSTILE_DB_EXAMPLES", "60"))


def _obstruct(identity: Path, how: str) -> None:
    if how == "dir-is-file":
        identity.write_text("not a directory")
    elif how == "above-is-file":
        identity.parent.mkdir(parents=True, exist_ok=True)
        identity.parent.joinpath("blocker").write_text("x")
    else:
        identity.mkdir(parents=True, exist_ok=True)
        (identity / {"memory-dir": "MEMORY.md", "user-dir": "USER.md", "backup-dir": "MEMORY.md.bak"}[how]).mkdir()
        if how == "backup-dir":
            (identity / "MEMORY.md").write_text("# old\n")


@settings(max_examples=EXAMPLES, deadline=None)
@given(how=st.sampled_from(["dir-is-file", "above-is-file", "memory-dir", "user-dir", "backup-dir"]),
       operation=st.sampled_from(["dream", "forget"]), important=st.floats(0.5, 1.0))
def test_an_identity_file_that_cannot_be_written_is_the_documented_error(how: str, operation: str,
                                                                         important: float) -> None:
    with scratch() as tmp:
        identity = tmp / ("blocker/identity" if how == "above-is-file" else "identity")
        mem = SqliteMemory(tmp / "m.db", FixedClock(T0), identity_dir=identity)
        try:
            mem.seed([{"content": f"the user prefers {w} for the billing service", "importance": important,
                       "priority": "permanent", "subject": "user", "predicate": f"prefers {w}"}
                      for w in ("vim", "tabs", "postgres")])
            _obstruct(identity, how)
            try:
                if operation == "dream":
                    within(lambda: mem.dream(force=True))
                else:
                    within(lambda: mem.forget("prefers postgres billing"))
            except SqliteMemoryError as exc:
                message = str(exc)
                assert "\n" not in message, message
                assert str(identity) in message, message
            if operation == "forget":  # the deletion was committed before the re-render
                assert not any("postgres" in d.text for d in mem.documents())
        finally:
            mem.close()
