"""``run --baseline DIR`` where DIR is no readable run (hostile probe, round 11: found by generated option combinations).

Before: the baseline was read only after the whole replay (and after ``--fuzz-examples``' properties): a typo, a
scenario directory or a damaged run file cost the replay, then exit 2, and no run directory was written at all. Now
it is read before any replay, as ``--gates`` and ``--benchmark`` are: one located line, exit 2, nothing replayed.
Generated: what stands where the baseline should be (nothing, a scenario directory, a file, a run missing a file, a
run whose file is cut at some byte or has a byte changed).
"""

from __future__ import annotations

import os
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.harness.conftest import SCENARIOS
from tests.helpers import examples
from tests.hostile_cli._support import assert_one_line_error, cli
from tests.hostile_cli.test_run_dir_mutations import _shards

RUN_FILES = ["summary.json", "results.jsonl", "probes.jsonl", "traces.jsonl"]


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), kind=st.sampled_from(["missing", "scenarios", "file", "without", "cut", "byte"]),
       name=st.sampled_from(RUN_FILES))
def test_a_baseline_that_is_no_readable_run_is_refused_before_any_replay(
        tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], data: st.DataObject, kind: str,
        name: str) -> None:
    run = _shards(tmp_path_factory)[1]
    root = tmp_path_factory.mktemp("baseline")
    base = root / "base"
    if kind == "scenarios":
        base = SCENARIOS / "recall"
    elif kind == "file":
        base.write_text("{}\n", encoding="utf-8")
    elif kind != "missing":
        shutil.copytree(run, base)
        target = base / name
        blob = target.read_bytes()
        if kind == "without":
            target.unlink()
        elif kind == "cut":
            target.write_bytes(blob[:data.draw(st.integers(0, max(0, len(blob) - 2)), label="cut at")])
        else:
            at = data.draw(st.integers(0, len(blob) - 1), label="byte at")
            target.write_bytes(blob[:at] + data.draw(st.sampled_from([b"\xff", b"{", b"\n", b'"', b"\x00"])) + blob[at + 1:])
    out = root / f"out-{os.urandom(3).hex()}"
    scenario = SCENARIOS / "recall" / "abstain-unrelated.yaml"
    outcome = cli(["run", str(scenario), "--strategy", "heuristic", "--no-gates", "--baseline", str(base), "--out",
                   str(out)], capsys)
    if kind in ("byte", "cut", "without") and outcome.code != 2:  # a change the reader accepts (a traces.jsonl
        assert out.exists()  # without its file, a byte inside a text value): the run goes on as before
        return
    assert_one_line_error(outcome, mentions=())
    assert "replayed" not in outcome.err
    assert not out.exists()
