"""A run directory appears whole or not at all (``write_run``: render, stage in a sibling, swap in one rename).

Generated: the state before (no directory, an empty one, a previous run, a symlink to one, a user's own files and
folders beside the run files) and where the write fails (a renderer, the k-th staged file, the carry-over of the
user's files, the swap) — then either the previous directory is there unchanged or the new run is, whole, with
the user's entries kept, and no staging directory is left. And a writer SIGKILLed at random moments (slow tier)
leaves the previous complete run or the new complete one.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.evaluation import evaluate_run
from harness.replay import Probe, ScenarioResult
from harness.reporting import _rundir, write_run
from harness.reporting._rundir import RUN_FILES
from tests.harness.conftest import SCENARIOS
from tests.helpers import examples

REPO = Path(__file__).resolve().parents[2]
SETTINGS = settings(max_examples=examples(60), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
NAMES = st.sampled_from(["notes.txt", "regressions", "a", "b.json", ".hidden", "x y"])


def _run(tag: str, *, write: Path | None = None) -> dict[str, Any]:
    results = [ScenarioResult("s", "heuristic", True, (), (Probe("s", 0, "recall", "heuristic", metrics={"f1": 1.0}),),
                              "t")]
    kwargs = {"summary": evaluate_run(results, ["heuristic"], run_id=tag), "results": results, "spans": [],
              "html": f"<html>{tag}</html>"}
    if write is not None:
        write_run(write, **kwargs)
    return kwargs


def _snapshot(root: Path) -> dict[str, object]:
    """Every entry under ``root`` (symlinks not followed): file bytes, ``dir`` or the link target."""
    if not root.exists():
        return {}
    out: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            out[rel] = f"link:{os.readlink(path)}" if path.is_symlink() else "dir" if path.is_dir() \
                else path.read_bytes()
    return out


def _is_run(snapshot: dict[str, object], tag: str) -> bool:
    return all(name in snapshot for name in RUN_FILES) and snapshot["report.html"] == f"<html>{tag}</html>".encode() \
        and f'"run_id": "{tag}"'.encode() in snapshot["summary.json"]  # type: ignore[operator]


class Boom(Exception):
    pass


@SETTINGS
@given(before=st.sampled_from(["missing", "empty", "run", "symlink"]),
       extras=st.lists(st.tuples(NAMES, st.sampled_from(["file", "tree", "link"])), max_size=3, unique_by=lambda t: t[0]),
       failure=st.one_of(st.just(("none", 0)), st.just(("render", 0)), st.tuples(st.just("put"), st.integers(0, 6)),
                         st.just(("link", 0)), st.just(("exchange", 0)), st.just(("rename", 0))))
def test_a_run_directory_is_the_previous_one_or_the_new_one(
        monkeypatch: pytest.MonkeyPatch, before: str, extras: list[tuple[str, str]], failure: tuple[str, int]) -> None:
    with tempfile.TemporaryDirectory() as tmp, monkeypatch.context() as patch:
        root = Path(tmp)
        out = root / "reports" / "latest"
        real = root / "elsewhere" / "run" if before == "symlink" else out
        if before != "missing":
            real.mkdir(parents=True)
        if before in ("run", "symlink"):
            _run("old", write=real)
        if before == "symlink":
            out.parent.mkdir(parents=True)
            out.symlink_to(real)
        for name, kind in extras if before != "missing" else ():
            if kind == "file":
                (real / name).write_text(f"mine {name}")
            elif kind == "tree":
                (real / name / "deep").mkdir(parents=True)
                (real / name / "deep" / "f.yaml").write_text("kept")
            else:
                (real / name).symlink_to("/nonexistent/target")
        old = _snapshot(real)
        kind, k = failure
        calls = {"put": 0}
        if kind == "render":
            patch.setattr(_rundir, "junit_chunks", lambda *a: (_ for _ in ()).throw(Boom()))
        elif kind == "put":
            put = _rundir._put

            def failing_put(path: Path, write: Any) -> None:
                if calls["put"] == k:
                    whole = io.BytesIO()
                    write(whole)  # the file's streamed bytes: half of them written, then the failure
                    path.write_bytes(whole.getvalue()[: len(whole.getvalue()) // 2])
                    raise Boom()
                calls["put"] += 1
                put(path, write)

            patch.setattr(_rundir, "_put", failing_put)
        elif kind == "link":
            patch.setattr(_rundir, "_link", lambda *a: (_ for _ in ()).throw(OSError(28, "No space left on device")))
        elif kind == "exchange":
            patch.setattr(_rundir, "_exchange", lambda *a: (_ for _ in ()).throw(OSError(5, "I/O error")))
        elif kind == "rename":  # no RENAME_EXCHANGE here: the two-rename fallback
            patch.setattr(_rundir, "_exchange", lambda *a: False)
        new = _run("new")
        try:
            write_run(out, **new)
        except (Boom, OSError):
            failed = True
        else:
            failed = False
        now = _snapshot(real)
        leftovers = [p.name for p in root.rglob(".tmp-*")]
        assert leftovers == []
        assert out.is_symlink() == (before == "symlink")
        if failed:
            assert kind in ("render", "put", "exchange")
            assert now == old
            return
        assert _is_run(now, "new"), sorted(now)
        kept = {rel: v for rel, v in old.items() if rel.split("/")[0] not in RUN_FILES}
        assert {rel: v for rel, v in now.items() if rel.split("/")[0] not in RUN_FILES} == kept
        assert set(now) - set(kept) == set(RUN_FILES)


def test_a_failing_run_write_through_the_cli_leaves_the_previous_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "latest"
    args = ["run", str(SCENARIOS / "recall" / "type-user.yaml"), "--no-gates", "--out", str(out)]
    assert main(args, environ={}) == 0
    (out / "notes.txt").write_text("mine")
    before = _snapshot(out)
    monkeypatch.setattr(_rundir, "summary_markdown", lambda *a: (_ for _ in ()).throw(OSError(28, "No space left")))
    capsys.readouterr()
    assert main(args, environ={}) == 2
    [line] = [x for x in capsys.readouterr().err.splitlines() if not x.startswith("replayed ")]
    assert line.startswith("memharness: ")
    assert "No space left" in line
    assert _snapshot(out) == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp-")] == []


def test_a_run_directory_holding_the_working_directory_is_written_in_place(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--out .``: swapping away the directory the process stands in would leave it nowhere; each file is still
    replaced atomically."""
    monkeypatch.chdir(tmp_path)
    inode = tmp_path.stat().st_ino
    _run("here", write=Path("."))
    assert tmp_path.stat().st_ino == inode
    assert _is_run(_snapshot(tmp_path), "here")


WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from tests.harness.test_run_dir_atomic import _run
    from harness.reporting import write_run
    out = Path(sys.argv[1])
    print("ready", flush=True)
    gen = 1
    while True:
        kwargs = _run(f"gen{gen}")
        kwargs["html"] = f"<html>gen{gen}</html>"
        kwargs["spans"] = [{"pad": "x" * 200_000}] * 20  # a few MB of traces: kills land mid-write
        write_run(out, **kwargs)
        print(gen, flush=True)
        gen += 1
""")


@pytest.mark.slow  # SIGKILL loop (tests/_tiers.py)
@settings(max_examples=examples(40), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.floats(0.0, 0.6))
def test_a_killed_writer_leaves_a_whole_run_directory(delay: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "reports" / "latest"
        _run("gen0", write=out)
        (out / "notes.txt").write_text("mine")
        with subprocess.Popen([sys.executable, "-c", WRITER, str(out)], cwd=REPO, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)}) as proc:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
            time.sleep(delay)
            proc.send_signal(signal.SIGKILL)
            done = proc.stdout.read().split()
        snap = _snapshot(out)
        last = int(done[-1]) if done else 0
        assert _is_run(snap, f"gen{last}") or _is_run(snap, f"gen{last + 1}"), (last, sorted(snap))
        assert snap["notes.txt"] == b"mine"
        assert set(snap) == {*RUN_FILES, "notes.txt"}
        _run("after", write=out)  # the next run sweeps what the killed one left beside
        assert [p.name for p in out.parent.iterdir()] == ["latest"]
