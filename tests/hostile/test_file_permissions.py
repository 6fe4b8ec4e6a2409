"""The file core where the memory cannot all be read: folders and topic files without read permission, a memory
root that cannot be listed, a folder above the root that cannot be searched (issue 33, round 12).

Before: an unreadable folder was skipped in silence (its memories vanished from every scan, no warning), every index
rebuild (dream, forget, extract) dropped the ``MEMORY.md`` lines of files it could not read, a root that could not be
listed read as an empty memory, and a folder above the root without search permission let a raw
``PermissionError`` out of ``scan``, ``recall`` and ``rebuild_index``.

Now: an unreadable folder or file is skipped and reported (``ScanResult.dropped``; the warnings of dream and forget
name it), its index lines are kept by every rebuild, and a root that cannot be listed or reached is a one-line
``StoreError`` naming it (``scan``, ``recall``, ``rebuild_index``) or the operation's documented ``error`` result
(dream, forget). The layouts, the obstacles and the operation are generated. File modes do not stop root, so each
case runs in a forked child that has dropped to an unprivileged user (or as the current user when it is not root).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_core.clock import FixedClock
from memory_core.files.dream import run_dream
from memory_core.files.forget import forget
from memory_core.files.index import rebuild_index
from memory_core.files.recall import recall
from memory_core.files.scan import scan
from memory_core.files.store import FileStore
from tests.conftest import T0
from tests.helpers import put_doc

EXAMPLES = int(os.environ.get("MEMHARNESS_HOSTILE_EXAMPLES", "40"))
NOBODY = 65534
WORDS = ("vim", "tabs", "postgres", "billing", "grafana", "deploy", "friday", "terse")
TOPICS = ("user", "feedback", "project", "reference")

if not hasattr(os, "fork"):  # pragma: no cover - POSIX only
    pytest.skip("needs fork", allow_module_level=True)


def _unprivileged(fn: Callable[[], Any]) -> Any:
    """``fn()`` in a forked child without root's power over file modes; its JSON answer, or the exception's
    ``{"raised": type, "message": text}``."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child never returns to pytest
        os.close(read)
        try:
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            answer = {"value": fn()}
        except BaseException as exc:  # every failure is the test's evidence
            answer = {"raised": type(exc).__name__, "message": str(exc)}
        with os.fdopen(write, "w") as out:
            json.dump(answer, out, default=repr)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as answer_in:
        text = answer_in.read()
    os.waitpid(pid, 0)
    assert text, "the unprivileged child died without an answer"
    return json.loads(text)


def _owned(path: Path) -> None:
    """Give the tree to the unprivileged user (when running as root), folders 755 and files 644."""
    for p in [path, *path.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
        if os.geteuid() == 0:
            os.chown(p, NOBODY, NOBODY)


layouts = st.lists(
    st.tuples(st.sampled_from(TOPICS), st.sampled_from(("", "a/", "a/b/", "c/")), st.sampled_from(WORDS)),
    min_size=1, max_size=7, unique_by=lambda t: (t[0], t[1], t[2]),
)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layout=layouts, picks=st.lists(st.integers(0, 50), min_size=1, max_size=3),
       mode=st.sampled_from((0o000, 0o300, 0o100)), where=st.sampled_from(("folder", "file", "root", "parent")),
       operation=st.sampled_from(("scan", "recall", "rebuild", "dream", "forget")))
def test_what_cannot_be_read_is_reported_and_never_dropped_from_the_index(
        layout: list[tuple[str, str, str]], picks: list[int], mode: int, where: str, operation: str) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="perm-"))
    try:
        home = scratch / "proj"
        root = home / "memory"
        store = FileStore(root, FixedClock(T0), durable=False)
        keys = [f"{topic}/{sub}{word}.md" for topic, sub, word in layout]
        for key in keys:
            word = key.rsplit("/", 1)[1].removesuffix(".md")
            put_doc(store, key, key.split("/")[0], f"the team uses {word} every day", description=f"about {word}")
        rebuild_index(store)
        index_before = (root / "MEMORY.md").read_text().split("\n")
        files_before = {k: (root / k).read_bytes() for k in keys}
        _owned(scratch)
        folders = sorted({k.rsplit("/", 1)[0] for k in keys} | {k.split("/")[0] for k in keys})
        if where == "folder":
            blocked = sorted({folders[i % len(folders)] + "/" for i in picks})
        elif where == "file":
            blocked = sorted({keys[i % len(keys)] for i in picks})
        else:
            blocked = ["."]
        target = {"root": root, "parent": home}.get(where)
        hidden = [k for k in keys if any(k == b or k.startswith(b) for b in blocked)] if target is None else keys
        # 0o100 on a file still refuses reading; on a folder it allows reaching its files by name but not listing
        chmod = [(target, mode if where == "root" else 0o000)] if target is not None else \
            [(root / b.rstrip("/"), mode) for b in blocked]

        def act() -> Any:
            for path, m in sorted(chmod, key=lambda c: -len(c[0].parts)):  # deepest first: still reachable
                os.chmod(path, m)
            s = FileStore(root, FixedClock(T0), durable=False)
            if operation == "scan":
                result = scan(s)
                return {"docs": [d.relative_path for d in result.docs], "warnings": list(result.warnings)}
            if operation == "recall":
                return {"docs": [d.relative_path for d in recall(s, " ".join(WORDS), now=T0).selected]}
            if operation == "rebuild":
                rebuild_index(s)
                return {}
            outcome = run_dream(s, now=T0) if operation == "dream" else forget(s, "zzz-no-such-entry", now=T0)
            return {"error": outcome.error, "warnings": list(outcome.warnings)}

        answer = _unprivileged(act)
        for path, _m in chmod:
            os.chmod(path, 0o755)
        for p in root.rglob("*"):
            os.chmod(p, stat.S_IMODE(os.lstat(p).st_mode) | (0o755 if p.is_dir() else 0o644))

        if target is not None:  # nothing can be listed: a one-line error naming the root, never an empty memory
            if operation in ("scan", "recall", "rebuild") or ("raised" in answer):
                assert answer.get("raised") == "StoreError", answer
                message = answer["message"]
            else:
                message = answer["value"]["error"]
                assert message, answer
            assert "\n" not in message, message
            assert "Traceback" not in message, message
            if operation in ("scan", "recall", "rebuild"):
                assert str(root) in message, message
        else:
            assert "raised" not in answer, answer
            value = answer["value"]
            if "docs" in value:
                assert not set(value["docs"]) & set(hidden), value
            if operation in ("scan", "dream", "forget"):  # each obstacle that hides a memory is named
                if operation == "dream":
                    assert value["error"] is None, value
                outermost = [b for b in blocked if not any(b != o and b.startswith(o) for o in blocked)]
                for b in outermost:  # one inside a blocked folder cannot be seen, so cannot be named
                    if any(k == b or k.startswith(b) for k in keys):
                        assert any(w.startswith(b) and "unreadable" in w for w in value["warnings"]), (b, value)
        index_after = (root / "MEMORY.md").read_text().split("\n")
        for line in index_before:
            if any(f"]({k})" in line for k in hidden):
                assert line in index_after, f"lost index line {line!r}: {index_after}"
        for key in hidden:  # nothing the obstacle hid was touched
            assert (root / key).read_bytes() == files_before[key], key
    finally:
        for p in [scratch, *scratch.rglob("*")]:
            if p.is_dir() and not p.is_symlink():
                os.chmod(p, 0o755)
        shutil.rmtree(scratch, ignore_errors=True)


def test_a_store_without_listing_is_scanned_through_list() -> None:
    """A store of the protocol alone (no ``listing``) still scans: its ``list`` is the listing."""

    class Plain:
        def __init__(self, inner: FileStore) -> None:
            self.inner = inner

        def __getattr__(self, name: str) -> Any:
            if name == "listing":
                raise AttributeError(name)
            return getattr(self.inner, name)

    with tempfile.TemporaryDirectory() as tmp:
        store = FileStore(Path(tmp) / "memory", FixedClock(T0), durable=False)
        put_doc(store, "user/vim.md", "user", "the user prefers vim")
        assert [d.relative_path for d in scan(Plain(store)).docs] == ["user/vim.md"]  # type: ignore[arg-type]
