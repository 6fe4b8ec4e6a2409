"""``memharness docs --check -o FILE`` whatever FILE is (hostile probe, round 12): on the old code a FIFO held the
command for ever and a file that is not UTF-8 ended in ``internal error: UnicodeDecodeError``.

Generated: FILE holds random bytes, the up-to-date reference with one byte changed, a BOM or CRLF line ends, or the
reference itself; or is a FIFO or a directory. The reference is up to date (exit 0; with CRLF line ends too, as
``read_text`` reads them), any other content is out of date (exit 1), a FIFO or a directory is one line naming it
(exit 2), never blocking.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli._parser import build_parser
from harness.cli._report_cmds import cli_markdown
from tests.hostile_cli._support import cli

REFERENCE = cli_markdown(build_parser()).encode("utf-8")


def _content(recipe: tuple[str, bytes | int, int]) -> bytes:
    """The bytes a recipe names (a recipe, not the bytes, is drawn: a failure shows a short example)."""
    kind, a, b = recipe
    if kind == "random":
        assert isinstance(a, bytes)
        return a
    if kind == "changed":
        assert isinstance(a, int)
        at = a % len(REFERENCE)
        return REFERENCE[:at] + bytes([b if b != REFERENCE[at] else (b + 1) % 256]) + REFERENCE[at + 1:]
    return {"bom": b"\xef\xbb\xbf" + REFERENCE, "crlf": REFERENCE.replace(b"\n", b"\r\n"),
            "utf-16": REFERENCE.decode().encode("utf-16"), "same": REFERENCE}[kind]


RECIPE = st.one_of(st.tuples(st.just("random"), st.binary(max_size=200), st.just(0)),
                   st.tuples(st.just("changed"), st.integers(0, len(REFERENCE)), st.integers(0, 255)),
                   st.tuples(st.sampled_from(["bom", "crlf", "utf-16", "same"]), st.just(0), st.just(0)))


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(recipe=RECIPE)
def test_any_content_is_up_to_date_or_out_of_date(tmp_path_factory: pytest.TempPathFactory,
                                                  recipe: tuple[str, bytes | int, int],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    content = _content(recipe)
    out = tmp_path_factory.mktemp("docs") / "cli.md"
    out.write_bytes(content)
    o = cli(["docs", "--check", "-o", str(out)], capsys)
    try:  # as read_text reads it: universal newlines
        same = content.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n") == REFERENCE.decode()
    except UnicodeDecodeError:
        same = False
    assert (o.code, o.err) == ((0, "") if same else (1, "")), (o.code, o.err)
    assert out.read_bytes() == content  # --check writes nothing


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_file_that_is_no_regular_file_is_one_line(tmp_path: Path, kind: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cli.md"
    os.mkfifo(out) if kind == "fifo" else out.mkdir()
    start = time.monotonic()
    o = cli(["docs", "--check", "-o", str(out)], capsys)
    assert time.monotonic() - start < 5
    assert o.code == 2
    assert o.err.startswith(f"memharness: {out}:1: file: not a regular file"), o.err
    assert len(o.err.splitlines()) == 1
