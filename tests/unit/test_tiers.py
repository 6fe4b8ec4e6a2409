"""The quick tier and the slow tier (tests/_tiers.py): what a bare ``pytest`` leaves out, and what brings it back."""

from __future__ import annotations

import pytest

from tests import _tiers

pytest_plugins = ["pytester"]

TESTS = '''
import sys

import pytest


def test_quick():
    pass


@pytest.mark.slow
def test_slow():
    pass


@pytest.mark.slow
def test_slow_may_import_the_heavy_module():
    sys.modules.setdefault("memharness_fake_heavy", sys)


def test_quick_importing_the_heavy_module():
    if __import__("os").environ.get("IMPORT_HEAVY"):
        sys.modules.setdefault("memharness_fake_heavy", sys)


@pytest.mark.parametrize("speed", ["slow", "fast"])  # a parameter id is not the mark
def test_quick_with_a_slow_id(speed):
    pass


@pytest.mark.slow
def test_slow_that_can_fail():
    assert not __import__("os").environ.get("FAIL_SLOW")
'''


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setattr(_tiers, "HEAVY_IMPORT", "memharness_fake_heavy")
    monkeypatch.delitem(__import__("sys").modules, "memharness_fake_heavy", raising=False)
    pytester.makeini("[pytest]\ntestpaths = t\n")
    pytester.mkdir("t")
    (pytester.path / "t" / "test_a.py").write_text(TESTS, encoding="utf-8")
    return pytester


TIERS = ("-p", "tests._tiers", "-p", "no:xdist")  # the plugin under test, alone


def _run(suite: pytest.Pytester, *args: str) -> pytest.RunResult:
    return suite.runpytest(*TIERS, "-p", "no:cacheprovider", "-rA", *args)


def test_a_bare_run_leaves_the_slow_tier_out_and_says_so(suite: pytest.Pytester) -> None:
    for args in ((), ("t",)):  # pytest, and pytest with the testpaths named
        result = _run(suite, *args)
        result.assert_outcomes(passed=4, deselected=3)
        result.stdout.fnmatch_lines(["*!!! 3 tests of the slow tier*were not run: `python -m pytest -m slow` runs them*"])
        ran = [line for line in result.stdout.lines if line.startswith("PASSED")]
        assert not [line for line in ran if "::test_slow" in line], ran
        assert len([line for line in ran if "test_quick_with_a_slow_id" in line]) == 2


@pytest.mark.parametrize(("args", "passed", "deselected"), [
    (("--slow",), 7, 0),                      # both tiers
    (("-m", "slow"), 3, 4),                   # the slow tier alone (.ci/run)
    (("-m", "not slow"), 4, 3),               # an explicit expression decides alone
    (("-k", "test_slow and not fail"), 2, 5), # so does a name expression
    (("t/test_a.py",), 7, 0),                 # a named file runs whole
    (("t/test_a.py::test_slow",), 1, 0),
])
def test_the_slow_tier_runs_when_asked_for(suite: pytest.Pytester, args: tuple[str, ...], passed: int,
                                           deselected: int) -> None:
    result = _run(suite, *args)
    result.assert_outcomes(passed=passed, deselected=deselected)
    assert "were not run" not in result.stdout.str()


def _ran(result: pytest.RunResult) -> tuple[int, int]:
    outcomes = result.parseoutcomes()
    return outcomes.get("passed", 0), outcomes.get("failed", 0)


def test_a_slow_failure_comes_back_under_last_failed(suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    lf = (*TIERS, "--lf")  # the cache plugin on: it keeps what failed
    monkeypatch.setenv("FAIL_SLOW", "1")
    assert _ran(suite.runpytest(*TIERS, "-m", "slow")) == (2, 1)
    again = suite.runpytest(*lf)
    assert _ran(again) == (0, 1)
    again.stdout.fnmatch_lines(["FAILED t/test_a.py::test_slow_that_can_fail*"])
    monkeypatch.delenv("FAIL_SLOW")
    assert _ran(suite.runpytest(*lf)) == (1, 0)
    assert _ran(suite.runpytest(*lf)) == (4, 0)  # nothing failed now: --lf runs the quick tier, as a bare run does


def test_a_quick_test_that_imports_litellm_fails_naming_the_mark(suite: pytest.Pytester,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IMPORT_HEAVY", "1")
    result = _run(suite, "-k", "quick_importing")
    result.assert_outcomes(passed=1, errors=1, deselected=6)
    result.stdout.fnmatch_lines(["*test_quick_importing_the_heavy_module imported memharness_fake_heavy (3-4 s of CPU*"
                                 "mark it @pytest.mark.slow*"])


def test_a_slow_test_may_import_it(suite: pytest.Pytester) -> None:
    _run(suite, "-m", "slow").assert_outcomes(passed=3, deselected=4)
