"""Each property catches a deliberately broken twin, and the regression scenario it writes reproduces it."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.replay import load_factory
from harness.scenario import load_scenario
from harness.tools import default_properties, fuzz

pytestmark = pytest.mark.slow  # runs the property suite end to end against the core and each broken twin

CASES = [
    ("index-within-caps", "tests.twins:bloated_index"),
    ("index-within-caps", "tests.twins:escaping"),
    ("replay-adds-nothing", "tests.twins:duplicating"),
    ("dream-retention-idempotent", "tests.twins:lossy_dream"),
    ("forgotten-never-recalled", "tests.twins:leaky_forget"),
    ("recall-bounded", "tests.twins:over_limit"),
    ("order-independent", "tests.twins:order_dependent"),
    ("no-write-outside-root", "tests.twins:escaping"),
    ("planted-fact-recall", "tests.twins:forgetful"),
]


@pytest.mark.parametrize(("prop", "system"), CASES)
def test_property_catches_broken_twin_and_regression_reproduces(prop: str, system: str, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    [chosen] = [p for p in default_properties() if p.name == prop]
    report = fuzz([chosen], factory=load_factory(system), system_name=system, max_examples=60,
                  regressions=tmp_path / "regressions")
    [outcome] = report.properties
    assert not outcome.passed, f"{prop} did not catch {system}"
    assert outcome.regression is not None
    regression = Path(outcome.regression)
    scenario = load_scenario(regression)  # the written file is a valid v1 scenario
    assert scenario.id.startswith("regressions/")
    assert main(["run", str(regression), "--system", system, "--out", str(tmp_path / "o"), "--no-gates"],
                environ={}) == 1
    assert "FAILED:" in capsys.readouterr().out
    if prop != "order-independent":  # metamorphic: its expectations were computed by the broken system itself
        assert main(["run", str(regression), "--out", str(tmp_path / "ref"), "--no-gates"], environ={}) == 0


def test_reference_core_passes_every_property(tmp_path: Path) -> None:
    report = fuzz(default_properties(), max_examples=25, regressions=tmp_path)
    assert [p.name for p in report.properties if not p.passed] == []
    assert list(tmp_path.iterdir()) == []


def test_fuzz_cli_and_run_report_section(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["fuzz", "--max-examples", "10", "--property", "recall-bounded", "--out", str(tmp_path),
                 "--regressions", str(tmp_path / "reg")], environ={})
    assert code == 0
    assert "held   recall-bounded" in capsys.readouterr().out
    assert (tmp_path / "fuzz.json").exists()
    assert main(["fuzz", "--property", "nope"], environ={}) == 2
    scenarios = Path(__file__).resolve().parents[2] / "scenarios" / "forget"
    assert main(["run", str(scenarios), "--fuzz-examples", "5", "--out", str(tmp_path / "run")], environ={}) == 0
    assert "Property fuzzing" in (tmp_path / "run" / "report.html").read_text()
