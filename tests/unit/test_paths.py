from __future__ import annotations

from pathlib import Path

import pytest

from memory_core.errors import UnsafePathError
from memory_core.files.paths import (
    MemoryLayout,
    find_canonical_git_root,
    find_git_root,
    is_memory_path,
    memory_root,
    sanitize_cwd,
    validate_memory_path,
)


def test_sanitize_cwd_replaces_one_for_one() -> None:
    assert sanitize_cwd("/home/u/my.proj") == "-home-u-my-proj"
    assert sanitize_cwd("C:\\Users\\Me", windows=True) == "c--users-me"


def test_local_mode_uses_raw_project_root(tmp_path: Path) -> None:
    root = memory_root(tmp_path / "p", environ={"QWEN_CODE_MEMORY_LOCAL": "1"}, home=tmp_path)
    assert root == tmp_path / "p" / ".qwen" / "memory"
    layout = MemoryLayout(root)
    assert layout.state_dir == tmp_path / "p" / ".qwen"
    assert layout.index_path == root / "MEMORY.md"


def test_base_dir_env_and_home_default(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    default = memory_root(project, environ={}, home=tmp_path / "home")
    assert default == tmp_path / "home" / ".qwen" / "projects" / sanitize_cwd(str(project)) / "memory"
    custom = memory_root(project, environ={"QWEN_CODE_MEMORY_BASE_DIR": str(tmp_path / "b")}, home=tmp_path)
    assert custom.parts[-4:-2] == ("b", "projects")
    empty = memory_root(project, environ={"QWEN_CODE_MEMORY_BASE_DIR": ""}, home=tmp_path / "h")
    assert str(empty).startswith(str(tmp_path / "h" / ".qwen"))


def test_git_root_is_found_walking_up(tmp_path: Path) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "a" / "b").mkdir(parents=True)
    assert find_git_root(tmp_path / "repo" / "a" / "b") == tmp_path / "repo"
    assert find_canonical_git_root(tmp_path / "repo" / "a") == tmp_path / "repo"


def _make_worktree(tmp_path: Path) -> tuple[Path, Path]:
    main = tmp_path / "main"
    wt_git = main / ".git" / "worktrees" / "feature"
    wt_git.mkdir(parents=True)
    worktree = tmp_path / "feature"
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {wt_git}\n")
    (wt_git / "commondir").write_text("../..\n")
    (wt_git / "gitdir").write_text(f"{worktree / '.git'}\n")
    return main, worktree


def test_linked_worktree_shares_the_main_checkout_memory(tmp_path: Path) -> None:
    main, worktree = _make_worktree(tmp_path)
    assert find_canonical_git_root(worktree) == main
    assert memory_root(worktree, environ={}, home=tmp_path) == memory_root(main, environ={}, home=tmp_path)


def test_worktree_with_wrong_backlink_keeps_its_own_root(tmp_path: Path) -> None:
    main, worktree = _make_worktree(tmp_path)
    (main / ".git" / "worktrees" / "feature" / "gitdir").write_text("/elsewhere/.git\n")
    assert find_canonical_git_root(worktree) == worktree


def test_submodule_without_commondir_keeps_its_root(tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    (tmp_path / "modules" / "sub").mkdir(parents=True)
    (sub / ".git").write_text(f"gitdir: {tmp_path / 'modules' / 'sub'}\n")
    assert find_canonical_git_root(sub) == sub


@pytest.mark.parametrize(
    ("path", "inside"),
    [
        ("/m/memory", True),
        ("/m/memory/user/x.md", True),
        ("/m/memory/../memory-old/x.md", False),
        ("/m/memory-old/x.md", False),  # sibling prefix is outside (review fix 2)
        ("/m/other", False),
        ("/m/memory/..foo/x.md", False),  # parity: spec §1.5 quirk
    ],
)
def test_is_memory_path(path: str, inside: bool) -> None:
    assert is_memory_path(path, "/m/memory") is inside


@pytest.mark.parametrize(
    "raw",
    ["relative/dir", "/", "/a", "C:", "C:\\", "\\\\server\\share", "//server/share", "/tmp/a\x00b", "~", "~/", "~/..",
     "~/../x", "~/./"],
)
def test_validate_memory_path_rejects(raw: str) -> None:
    with pytest.raises(UnsafePathError):
        validate_memory_path(raw, home=Path("/home/u"))


def test_validate_memory_path_normalises() -> None:
    assert validate_memory_path("/tmp/mem/", home=Path("/home/u")) == Path("/tmp/mem")
    assert validate_memory_path("~/mem", home=Path("/home/u")) == Path("/home/u/mem")
    assert validate_memory_path("/tmp/a/../b", home=Path("/home/u")) == Path("/tmp/b")
