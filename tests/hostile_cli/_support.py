"""Shared helpers of the hostile-input suite: call the CLI in-process and classify the outcome."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main

STEP: str = "steps: [{advance: 1h}]\n"
SEEDED_SQLITE: str = """description: "{description}"
tags: [sqlite]
design: s1-sqlite
strategies: [heuristic]
clock: 2026-03-02T09:00:00Z
facts:
  f1: {{type: project, match: ["billing"]}}
memories:
  - {{path: project/m.md, name: m, type: project, body: "billing runs on docker", system: {{{system}}}}}
steps:
  - recall: {{query: "billing"}}
"""
"""A SQLite scenario of one seeded memory (on line 9) whose ``system`` mapping is ``{system}`` (YAML flow text)."""
LOCATED = re.compile(r"^memharness: (?P<file>.+?):(?P<line>\d+): (?P<field>[^:]+): (?P<what>.+)$")


@dataclass(frozen=True)
class Outcome:
    code: int
    out: str
    err: str
    seconds: float


def cli(args: list[str], capsys: pytest.CaptureFixture[str], environ: dict[str, str] | None = None) -> Outcome:
    """``memharness ARGS`` in this process, with ``environ`` (none by default: main() reads only what it is given)."""
    capsys.readouterr()
    start = time.perf_counter()
    code = main(args, environ=environ or {})
    seconds = time.perf_counter() - start
    captured = capsys.readouterr()
    return Outcome(code, captured.out, captured.err, seconds)


def assert_one_line_error(o: Outcome, *, mentions: tuple[str, ...], budget: float = 2.0) -> None:
    """The outcome class every hostile input must get: exit 2, one printable line naming the input, fast."""
    assert o.code == 2, (o.code, o.out, o.err)
    lines = o.err.splitlines()
    assert len(lines) == 1, o.err
    assert lines[0].startswith("memharness: "), o.err
    assert "Traceback" not in o.err
    assert "internal error" not in o.err, o.err
    assert lines[0].isprintable(), repr(lines[0])
    for text in mentions:
        assert text in lines[0], (text, lines[0])
    assert o.seconds < budget, f"{o.seconds:.2f}s for {lines[0][:120]}"


def set_at(value: Any, path: tuple[Any, ...], new: object) -> None:
    """Put ``new`` at ``path`` (keys and indices) inside parsed JSON ``value``."""
    for key in path[:-1]:
        value = value[key]
    value[path[-1]] = new


def load_error_at(path: Path, line: int, what: str) -> re.Match[str]:
    """The located one-line error loading the scenario at ``path`` gives, which must name ``line``; a scenario
    loaded without error fails the test, naming ``what`` was accepted."""
    from harness.errors import ScenarioError
    from harness.scenario import load_scenario

    try:
        load_scenario(path)
    except ScenarioError as exc:
        message = str(exc)
    else:
        pytest.fail(f"accepted {what} (line {line}):\n{path.read_text(encoding='utf-8')[:2000]}")
    match = LOCATED.match(f"memharness: {message}")
    assert match, message
    assert message.isprintable(), message
    assert int(match["line"]) == line, message
    return match


def quiet_run(out: Path, *paths: Path) -> Path:
    """``memharness run PATHS --no-gates --out OUT`` in this process, its output dropped, asserted to pass: a real
    run directory for the tests that read one back (default: one shipped recall scenario)."""
    import contextlib
    import io

    paths = paths or (Path(__file__).resolve().parents[2] / "scenarios" / "recall" / "multi-fact.yaml",)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["run", *map(str, paths), "--no-gates", "--out", str(out)], environ={}) == 0
    return out
