"""Results can fail without raising (issue 31): a recall or forget result carrying ``error`` is a failed step with
the system's message — a failed probe, never a harness error and never a pass."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.system import reference_factory

SCENARIO = """\
strategies: [heuristic]
facts: {t: {type: user, match: [Helix]}}
memories: [{path: user/editor.md, type: user, body: The user edits code in Helix, facts: [t]}]
steps:
  - recall: {query: which editor, expect: [t]}
  - forget: {query: "edits code in Helix", expect_removed: [t]}
"""


class _Failing:
    """The reference, except that one operation reports a failure instead of raising."""

    def __init__(self, inner: Any, which: str) -> None:
        self._inner, self._which = inner, which

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def recall(self, *args: Any, **kwargs: Any) -> Any:
        res = self._inner.recall(*args, **kwargs)
        return replace(res, selected=(), error="the index is unreadable") if self._which == "recall" else res

    def forget(self, *args: Any, **kwargs: Any) -> Any:
        res = self._inner.forget(*args, **kwargs)
        return replace(res, error="the store is read-only") if self._which == "forget" else res


def failing_recall(workdir: Path, clock: Any, model: Any, events: Any) -> Any:
    return _Failing(reference_factory(workdir, clock, model, events), "recall")


def failing_forget(workdir: Path, clock: Any, model: Any, events: Any) -> Any:
    return _Failing(reference_factory(workdir, clock, model, events), "forget")


@pytest.mark.parametrize(("factory", "kind", "message"), [
    ("failing_recall", "recall", "step 0 (recall, line 5): recall failed: the index is unreadable"),
    ("failing_forget", "forget", "step 1 (forget, line 6): forget failed: the store is read-only"),
])
def test_a_failed_result_is_a_failed_probe_with_the_systems_message(tmp_path: Path, factory: str, kind: str,
                                                                     message: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    code = main(["run", str(path), "--system", f"tests.harness.test_result_failures:{factory}", "--no-gates",
                 "--out", str(tmp_path / "o")], environ={})
    assert code == 1  # failed, not 2 (a harness error)
    result = json.loads((tmp_path / "o" / "results.jsonl").read_text(encoding="utf-8"))
    assert result["status"] == "failed"
    assert result["error"] is None
    assert message in result["failures"]
    probes = [json.loads(line) for line in (tmp_path / "o" / "probes.jsonl").read_text().splitlines()]
    failed = [p for p in probes if p["kind"] == kind]
    assert failed[0]["passed"] is False
    assert failed[0]["error_message"] in message


def test_the_unchanged_reference_passes_the_same_scenario(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    assert main(["run", str(path), "--system", "reference", "--no-gates", "--out", str(tmp_path / "o")],
                environ={}) == 0
