"""An output file the user cannot write (hostile probe, round 11, as a non-root user).

Before: a command writing one file (``report -o``, ``schema -o``, ``docs -o``) into a directory it may not write
said ``memharness: /abs/dir/.tmp-y6vp_sme: Permission denied`` — the random temp file, not the output asked for —
and ``docs -o FILE`` wrote FILE and then failed on the package's stored ``--help`` (an install the user cannot
write), one of its two files written. Now the line names the output (``<output>: Permission denied``), and ``docs``
checks both targets first and writes nothing unless it can write both. Generated: the command, the error the
directory gives (permission, read-only file system, full disk, quota) and which target of ``docs`` is locked. Root
ignores file modes, so the directory's refusal is the temp file's creation failing as it fails for such a user.
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli._report_cmds import top_help_path
from tests.helpers import examples
from tests.hostile_cli._support import assert_one_line_error, cli
from tests.hostile_cli.test_run_dir_mutations import _shards

ERRORS = st.sampled_from([errno.EACCES, errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EPERM])


def _command(kind: str, run_dir: Path, out: Path) -> list[str]:
    return {"report": ["report", str(run_dir), "-o", str(out)], "schema": ["schema", "-o", str(out)],
            "docs": ["docs", "-o", str(out)]}[kind]


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["report", "schema", "docs"]), code=ERRORS, depth=st.integers(0, 2))
def test_an_output_that_cannot_be_created_is_named_not_its_temp_file(
        tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], kind: str, code: int,
        depth: int) -> None:
    run_dir = _shards(tmp_path_factory)[1] if kind == "report" else Path("unused")
    root = tmp_path_factory.mktemp("out")
    out = root.joinpath(*["sub"] * depth, "file.out")
    real = tempfile.mkstemp

    def refused(*args: object, **kwargs: object) -> tuple[int, str]:
        where = Path(str(kwargs.get("dir") or "."))
        if where == out.parent:
            raise OSError(code, os.strerror(code), str(where / ".tmp-abc123"))
        return real(*args, **kwargs)  # type: ignore[call-overload, no-any-return]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tempfile, "mkstemp", refused)
        if kind == "docs":  # its second target, the package's stored --help, stays as it is
            real_access = os.access
            patch.setattr(os, "access", lambda p, mode, **kw: real_access(p, mode, **kw)
                          if Path(p) != top_help_path().parent else True)
        outcome = cli(_command(kind, run_dir, out), capsys)
    assert_one_line_error(outcome, mentions=(f"{out}: {os.strerror(code)}",))
    assert ".tmp-" not in outcome.err
    assert not out.exists()


@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(locked=st.sampled_from(["output", "package", "output-above"]))
def test_docs_writes_both_of_its_files_or_neither(tmp_path_factory: pytest.TempPathFactory,
                                                   capsys: pytest.CaptureFixture[str], locked: str) -> None:
    root = tmp_path_factory.mktemp("docs")
    out = root / "new" / "cli.md" if locked == "output-above" else root / "cli.md"
    denied = {"output": root, "output-above": root, "package": top_help_path().parent}[locked]
    before = top_help_path().read_bytes()
    real = os.access
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) == denied and mode & os.W_OK
                      else real(p, mode, **kw))
        outcome = cli(["docs", "-o", str(out)], capsys)
    assert_one_line_error(outcome, mentions=(f"{denied} is not writable", "nothing written"))
    assert not out.exists()
    assert top_help_path().read_bytes() == before
