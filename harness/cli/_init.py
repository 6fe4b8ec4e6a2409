"""``memharness init``: a starter project that passes on its first run (issue 32: the first hour).

It writes a scenario about the user's own memory, the gates that fail a build, a system module to replace with the
user's own (it starts as the shipped reference, so the first run passes), and a GitHub Actions workflow. Nothing is
overwritten: an existing file is an error naming it. docs/tutorial.md walks from here to the first regression caught,
and tests/harness/test_tutorial.py executes that page.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path
from typing import Final

from harness.errors import HarnessError, naming, one_line

SCENARIO: Final = """\
# Your first scenario: what your memory system must remember, and how it is graded. docs/scenarios.md has every key.
description: "A user's durable setup is recalled for the questions it answers, and nothing for an unrelated one."
tags: [starter, recall]
clock: 2026-03-02T09:00:00Z
facts:                                  # the gold facts: a memory covers one when it contains every match phrase
  db: {type: project, match: ["staging database", "Postgres 16"]}
  editor: {type: user, match: ["helix"]}
  review: {type: feedback, match: ["small pull requests"]}
memories:                               # what the store holds before the first step
  - {path: project/staging.md, name: Staging, description: staging environment, type: project,
     body: "The staging database is Postgres 16 on the eu-west cluster.", facts: [db]}
  - {path: user/editor.md, name: Editor, description: editor preferences, type: user,
     body: "Uses helix with vim keys for every language.", facts: [editor]}
  - {path: feedback/review.md, name: Reviews, description: how the user wants code review, type: feedback,
     body: "Prefers small pull requests, one change each.", facts: [review]}
steps:
  - recall:
      query: "which postgres version does the staging database run"
      require: {recall: 1.0}            # a hard check: the run fails when the fact is not recalled
      expect: [db]
  - recall:
      query: "what editor do I use"
      expect: [editor]
      require: {recall: 1.0}
  - recall:
      query: "how should I size my pull requests for review"
      expect: [review]
      require: {recall: 1.0}
  - recall:
      query: "remind me of my editor and code review preferences"
      expect: [editor, review]          # a question two memories answer: both must be recalled
      require: {recall: 1.0}
  - recall:
      query: "what is the capital of Australia"
      expect: []                        # nothing relevant is stored: the right answer is to recall nothing
      measure: true                     # graded (recall.abstention_accuracy), not failed: the reference's keyword
                                        # heuristic recalls something for any query; require: {abstention: 1.0} to insist
"""

GATES: Final = """\
# Gates: what fails the build besides a failed scenario. docs/gates.md lists every metric and option.
[[gate]]
metric = "scenarios.failed"
max = 0

[[gate]]
metric = "scenarios.errors"
max = 0

[[gate]]
metric = "recall.recall"
min = 0.9
"""

SYSTEM: Final = '''\
"""Your memory system, as memharness sees it: ``factory(workdir, clock, model, events) -> system``.

It starts as the shipped reference (the qwen-code file memory), so the first run passes. Replace it with your own:
docs/system-protocol.md lists every method, and `memharness conformance --system my_memory:factory` tells you in
seconds what a new system gets wrong.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from harness.system import reference_factory

RECALL_LIMIT = 5
"""How many memories one recall may return (the reference's own limit is 5)."""


class MyMemory:
    """The reference system under your system's name, its recall cut to ``RECALL_LIMIT``."""

    name = "my-memory"
    design = "qwen-file"  # the specification it implements (the reference's): the qwen-file scenarios run against it
    # too; "" for a memory of your own design, which runs the portable scenarios only

    def __init__(self, workdir: Any, clock: Any, model: Any, events: Any) -> None:
        self._inner = reference_factory(workdir, clock, model, events)

    def recall(self, query: str, **kwargs: Any) -> Any:
        result = self._inner.recall(query, **kwargs)
        return dataclasses.replace(result, selected=result.selected[:RECALL_LIMIT])

    def __getattr__(self, attribute: str) -> Any:  # everything else: the reference's own
        return getattr(self._inner, attribute)


def factory(workdir: Any, clock: Any, model: Any, events: Any) -> MyMemory:
    return MyMemory(workdir, clock, model, events)
'''

WORKFLOW: Final = """\
# memharness on every pull request: the scenarios replayed against your system; a failed scenario or gate fails
# the job, each failed check is an annotation on the diff, and the verdict lands in the job summary.
name: memharness
on:
  pull_request:
  push:
    branches: [main]

jobs:
  memory:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.12"
      - name: Install memory-harness
        # Set the repository variable MEMHARNESS_INSTALL to a pip requirement for this harness: a git URL
        # ("memory-harness @ git+https://<your host>/memory-harness@<tag>") or a wheel you publish. It is not
        # installed by name on purpose: a different project owns the name memory-harness on PyPI.
        env:
          MEMHARNESS_INSTALL: ${{ vars.MEMHARNESS_INSTALL }}
        run: |
          if [ -z "$MEMHARNESS_INSTALL" ]; then
            echo "::error title=memharness::set the repository variable MEMHARNESS_INSTALL (a pip requirement for memory-harness)"
            exit 1
          fi
          pip install "$MEMHARNESS_INSTALL"
      - name: Replay the scenarios
        env:
          LITELLM_LOCAL_MODEL_COST_MAP: "True"
        run: memharness run scenarios --system my_memory:factory --out reports/latest
      - name: Upload the report
        if: always()
        uses: actions/upload-artifact@v4
        with:
          name: memharness-report
          path: reports/latest
"""

FILES: Final = {
    "scenarios/remembers-my-setup.yaml": SCENARIO,
    "scenarios/gates.toml": GATES,
    "my_memory.py": SYSTEM,
    ".github/workflows/memharness.yml": WORKFLOW,
}
"""What ``memharness init`` writes, by path relative to the project directory."""


def cmd_init(args: argparse.Namespace) -> int:
    root: Path = args.directory
    existing = [p for p in FILES if (root / p).exists()]
    if existing:
        raise HarnessError(f"{root / existing[0]}: already exists; init writes only into a project without "
                           f"{', '.join(FILES)}")
    made: list[Path] = []  # what this init created: taken back if it cannot finish (a full disk, a quota)
    try:
        for relative, text in FILES.items():
            path = root / relative
            for parent in reversed([path.parent, *path.parent.parents]):
                if not parent.exists():
                    parent.mkdir()
                    made.append(parent)
            _write_new(path, text)
            made.append(path)
    except BaseException:
        for created in reversed(made):
            with contextlib.suppress(OSError):
                created.rmdir() if created.is_dir() else created.unlink()
        raise
    print(f"wrote {len(FILES)} files into {one_line(str(root))}:")
    for relative in FILES:
        print(f"  {relative}")
    where = "" if root.resolve() == Path.cwd().resolve() else f"cd {root} && "
    print(f"next: {where}memharness run scenarios --system my_memory:factory   (docs/tutorial.md goes on from here)")
    return 0


def _write_new(path: Path, text: str) -> None:
    """Create ``path`` whole or not at all, never over a file that appeared meanwhile (temp + fsync + link)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with naming(path), open(tmp, "x", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.link(tmp, path)  # fails if path exists: nothing is overwritten
    except FileExistsError:
        raise HarnessError(f"{path}: already exists; init writes only new files") from None
    finally:
        tmp.unlink(missing_ok=True)
