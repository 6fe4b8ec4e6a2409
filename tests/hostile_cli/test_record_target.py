"""``run --record`` into a cassette set the user cannot write (hostile probe, round 11, as a non-root user).

Before: the run replayed every scenario and each one that called the model failed as the system's fault — ``step 0
(recall): the system under test failed: recall() raised PermissionError: … cassette.jsonl`` — exit 1, the run
directory written and the gates judged, nothing recorded. Now the set is checked when the model is set up, before
any replay: one line ``memharness: <set>: --record: <what> is not writable``, exit 2, no run directory. What is
locked is generated: the set's directory, its ``cassette.jsonl``, or the nearest existing directory above a set not
made yet. Root ignores file modes, so ``os.access`` answers as it would for a user without write permission.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.harness.conftest import SCENARIOS
from tests.helpers import examples
from tests.hostile_cli._support import assert_one_line_error, cli


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(locked=st.sampled_from(["set", "file", "above"]), depth=st.integers(0, 2),
       system=st.sampled_from(["reference", "sqlite"]))
def test_record_into_an_unwritable_set_is_one_line_before_any_replay(
        tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], locked: str, depth: int,
        system: str) -> None:
    root = tmp_path_factory.mktemp("record")
    shelf = root / "shelf"
    shelf.mkdir()
    target = shelf
    if locked == "above":
        target = shelf.joinpath(*["new"] * (depth + 1))  # not there yet: recording would make it
    elif locked == "file":
        (shelf / "cassette.jsonl").write_text("", encoding="utf-8")
        target = shelf / "cassette.jsonl"
    denied = shelf if locked in ("set", "above") else target
    real = os.access
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) == denied and mode & os.W_OK
                      else real(p, mode, **kw))
        out = root / "out"
        outcome = cli(["run", str(SCENARIOS / "recall" / "abstain-unrelated.yaml"), "--system", system, "--strategy",
                       "model", "--record", "--api-base", "http://127.0.0.1:9/v1", "--model", "openai/none",
                       "--cassettes", str(shelf if locked != "above" else target), "--no-gates", "--out", str(out)],
                      capsys)
    assert_one_line_error(outcome, mentions=("--record", f"{denied} is not writable"))
    assert not out.exists()
    assert not (shelf / "cassette.jsonl").exists() or locked == "file"
