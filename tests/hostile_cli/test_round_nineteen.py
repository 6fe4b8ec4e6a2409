"""Round 19: leftovers of the hostile-input issue (33). Each section is one class of input; each test draws its cases.

1. ``memharness compare A B --gates BAD`` printed the whole comparison (verdicts, metric lines, changed probes) and
   only then the gates file's error: the one-line error came after a screen of output, on stdout's heels. Now the
   gates file (``--gates``, or the one the candidate run recorded) is loaded before anything is printed: one line on
   stderr, exit 2, nothing on stdout.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.errors import HarnessError
from harness.evaluation import load_gates
from tests.harness.conftest import SCENARIOS
from tests.helpers import examples
from tests.hostile_cli._support import LOCATED, cli
from tests.hostile_cli.test_gates_file import DOCUMENT

SETTINGS = settings(max_examples=examples(40), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                           HealthCheck.filter_too_much])


@pytest.fixture(scope="module")
def one_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run of one shipped recall scenario (two columns: the reference and SQLite)."""
    out = tmp_path_factory.mktemp("run") / "run"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(["run", str(SCENARIOS / "recall" / "multi-fact.yaml"), "--out", str(out), "--no-gates"],
                    environ={})
    assert code == 0
    return out


# 1. compare --gates BAD ---------------------------------------------------------------------------------------------

@SETTINGS
@given(text=DOCUMENT, recorded=st.booleans())
def test_compare_checks_the_gates_file_before_printing(text: str, recorded: bool, one_run: Path,
                                                       tmp_path_factory: pytest.TempPathFactory,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """An invalid gates file, given (``--gates``) or recorded by the candidate run (``meta.gates_file``, edited
    since), is one located line and nothing else."""
    scratch = tmp_path_factory.mktemp("gates")
    gates = scratch / "g.toml"
    gates.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        load_gates(gates)
    except HarnessError:
        pass
    else:
        assume(False)  # a valid file: the other side, below
    args = ["compare", str(one_run), str(one_run)]
    if recorded:
        cand = scratch / "cand"
        shutil.copytree(one_run, cand)
        summary = json.loads((cand / "summary.json").read_text(encoding="utf-8"))
        summary["meta"]["gates_file"] = str(gates)
        (cand / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
        args[-1] = str(cand)
    else:
        args += ["--gates", str(gates)]
    o = cli(args, capsys)
    assert o.code == 2, (o.out, o.err)
    assert o.out == "", o.out
    assert len(o.err.splitlines()) == 1, o.err
    match = LOCATED.match(o.err.rstrip("\n"))
    assert match, o.err
    assert match["file"] == str(gates), o.err


def test_compare_with_a_valid_gates_file_still_prints(one_run: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The other side: a valid gates file is used, after the comparison is printed."""
    gates = tmp_path / "g.toml"
    gates.write_text('[[gate]]\nmetric = "recall.f1"\nvs = "baseline"\nmax_drop = 0.05\n', encoding="utf-8")
    o = cli(["compare", str(one_run), str(one_run), "--gates", str(gates)], capsys)
    assert o.code == 0, o.err
    assert "changed probe(s)" in o.out
    assert "recall.f1 drop vs baseline <= 0.05: pass" in o.out
