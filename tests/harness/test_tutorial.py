"""docs/tutorial.md is executed as written (issue 32): every ``$`` command of a ``console`` block runs in order in
one fresh directory (``cd`` moves it), every ``yaml file=PATH`` block is written to PATH, each output line shown
under a command must appear in what it printed (whitespace runs compared as one space), and the command must exit 0
or the code its ``# exit N`` comment names."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from harness.cli._init import FILES
from tests.harness.conftest import REPO

TUTORIAL = REPO / "docs" / "tutorial.md"
_FENCE = re.compile(r"^```(\S*)(?:[ \t]+file=(\S+))?[ \t]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
_EXIT = re.compile(r"\s+#\s*exit\s+(\d+)\s*$")


@dataclass
class Command:
    line: str
    exit_code: int = 0
    expected: list[str] = field(default_factory=list)


def _steps(text: str) -> list[Command | tuple[str, str]]:
    """Commands and files in page order."""
    steps: list[Command | tuple[str, str]] = []
    for match in _FENCE.finditer(text):
        lang, path, body = match.groups()
        if path:
            steps.append((path, body))
        elif lang == "console":
            for line in body.splitlines():
                if line.startswith("$ "):
                    code = _EXIT.search(line)
                    steps.append(Command(_EXIT.sub("", line[2:]).strip(), int(code.group(1)) if code else 0))
                elif line.strip() and isinstance(steps[-1], Command):
                    steps[-1].expected.append(line)
    return steps


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def test_the_page_has_commands_files_and_a_failing_run() -> None:
    steps = _steps(TUTORIAL.read_text(encoding="utf-8"))
    commands = [s for s in steps if isinstance(s, Command)]
    assert any(c.line.startswith("memharness init") for c in commands)
    assert any(c.exit_code == 1 for c in commands), "the tutorial catches a regression: one run must fail"
    assert any(isinstance(s, tuple) for s in steps)
    assert all(c.expected for c in commands if c.line.startswith("memharness run")), "every run shows its verdict"


@pytest.mark.slow
def test_the_tutorial_runs_as_written(tmp_path: Path) -> None:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PATH": f"{Path(sys.executable).parent}{os.pathsep}"
           f"{os.environ.get('PATH', '')}", "MEMHARNESS_HISTORY": str(tmp_path / "history.sqlite")}
    env.pop("GITHUB_ACTIONS", None)
    cwd = tmp_path
    for step in _steps(TUTORIAL.read_text(encoding="utf-8")):
        if isinstance(step, tuple):
            (cwd / step[0]).write_text(step[1], encoding="utf-8")
            continue
        if step.line.startswith("cd "):
            cwd = cwd / shlex.split(step.line)[1]
            continue
        done = subprocess.run(step.line, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                              check=False)
        printed = done.stdout + done.stderr
        assert done.returncode == step.exit_code, f"$ {step.line}\n{printed}"
        for line in step.expected:
            assert _squash(line) in _squash(printed), f"$ {step.line}: expected {line!r} in:\n{printed}"


def test_init_refuses_to_overwrite_and_names_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli import main

    assert main(["init", str(tmp_path)]) == 0
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()) == sorted(FILES)
    capsys.readouterr()
    (tmp_path / "my_memory.py").write_text("# mine\n")
    assert main(["init", str(tmp_path)]) == 2
    assert f"{tmp_path}/scenarios/remembers-my-setup.yaml: already exists" in capsys.readouterr().err
    assert (tmp_path / "my_memory.py").read_text() == "# mine\n"
