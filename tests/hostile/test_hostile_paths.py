"""Hostile base directories (issues 14, 23): Claude Code's ``validateMemoryPath`` rules, enforced by
``memory_root`` for ``$QWEN_CODE_MEMORY_BASE_DIR``; ``~/`` expands to home, never above it nor to ``/``."""

from __future__ import annotations

import posixpath
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_core.errors import UnsafePathError
from memory_core.files.paths import memory_root, validate_memory_path
from tests.helpers import examples
from tests.hostile.harness import within

HOME = Path("/home/u")
REJECTED = [
    ("relative/dir", "relative"), (".", "relative"), ("..", "relative"), ("./x", "relative"), ("../x", "relative"),
    ("", "relative"), ("~user/x", "relative"), ("/", "too_short"), ("/a", "too_short"), ("//", "unc"),
    ("/../", "too_short"), ("/./.", "too_short"), ("C:", "drive_root"), ("c:\\", "drive_root"),
    ("C:/", "drive_root"), ("\\\\server\\share", "unc"), ("//server/share", "unc"), ("///x", "unc"),
    ("/tmp/a\x00b", "nul"), ("\x00", "nul"), ("~", "home_or_above"), ("~/", "home_or_above"),
    ("~/..", "home_or_above"), ("~/../x", "home_or_above"), ("~/./", "home_or_above"), ("~//", "home_or_above"),
    ("~/a/../..", "home_or_above"), ("~///..", "home_or_above"), ("file:///etc", "url"), ("http://x/y", "url"),
    ("https://evil.example/mem", "url"), ("s3://bucket/x", "url"), ("javascript:alert(1)", "url"),
]


@pytest.mark.parametrize(("raw", "reason"), REJECTED)
def test_hostile_base_directories_are_refused_with_a_reason(raw: str, reason: str) -> None:
    with pytest.raises(UnsafePathError) as info:
        within(lambda: validate_memory_path(raw, home=HOME))
    assert info.value.reason == reason
    assert repr(raw) in str(info.value)  # the message names the input


@pytest.mark.parametrize(("raw", "expected"), [
    ("~//etc", "/home/u/etc"), ("~///etc", "/home/u/etc"), ("~/a/../etc", "/home/u/etc"), ("~/mem/", "/home/u/mem"),
    ("/tmp/mem/", "/tmp/mem"), ("/tmp/a/../b", "/tmp/b"), ("/tmp//x///", "/tmp/x"),
    ("/tmp/cafe\u0301", "/tmp/caf\u00e9"),  # NFC
])
def test_valid_base_directories_normalise(raw: str, expected: str) -> None:
    assert validate_memory_path(raw, home=HOME) == Path(expected)


@pytest.mark.parametrize("raw", [r for r, _ in REJECTED])
def test_memory_root_refuses_hostile_base_dirs(tmp_path: Path, raw: str) -> None:
    with pytest.raises(UnsafePathError):
        memory_root(tmp_path / "p", environ={"QWEN_CODE_MEMORY_BASE_DIR": raw}, home=HOME) if raw else (
            memory_root(tmp_path / "p", environ={}, home=Path("rel")))


def test_memory_root_expands_home_in_the_base_dir(tmp_path: Path) -> None:
    root = memory_root(tmp_path / "p", environ={"QWEN_CODE_MEMORY_BASE_DIR": "~//mem"}, home=tmp_path / "h")
    assert root.parts[: len((tmp_path / "h" / "mem").parts)] == (tmp_path / "h" / "mem").parts


@settings(max_examples=examples(300), deadline=None)
@given(st.one_of(st.text(max_size=40), st.text(alphabet="~/.\\:C\x00a", max_size=12)))
def test_any_text_is_refused_or_a_safe_absolute_path(raw: str) -> None:
    try:
        out = validate_memory_path(raw, home=HOME)
    except UnsafePathError as exc:
        reason = exc.reason
        out = None
    if out is None:
        assert reason in {r for _, r in REJECTED}
        return
    text = str(out)
    assert posixpath.isabs(text)
    assert not text.startswith("//")
    assert len(text) >= 3
    assert "\x00" not in text
    assert text == unicodedata.normalize("NFC", text)
    assert posixpath.normpath(text) == text
    if raw.startswith("~/"):
        assert out.is_relative_to(HOME)
        assert out != HOME
