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
    if "--import-heavy" in sys.argv or __import__("os").environ.get("IMPORT_HEAVY"):
        sys.modules.setdefault("memharness_fake_heavy", sys)
'''


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setattr(_tiers, "HEAVY_IMPORT", "memharness_fake_heavy")
    monkeypatch.delitem(__import__("sys").modules, "memharness_fake_heavy", raising=False)
    pytester.makeini("[pytest]\ntestpaths = t\n")
    pytester.mkdir("t")
    (pytester.path / "t" / "test_a.py").write_text(TESTS, encoding="utf-8")
    return pytester


def _run(suite: pytest.Pytester, *args: str) -> pytest.RunResult:
    return suite.runpytest("-p", "tests._tiers", "-p", "no:cacheprovider", "-p", "no:xdist", "-rA", *args)


def test_a_bare_run_leaves_the_slow_tier_out_and_says_so(suite: pytest.Pytester) -> None:
    result = _run(suite)
    result.assert_outcomes(passed=2, deselected=2)
    result.stdout.fnmatch_lines(["*!!! 2 tests of the slow tier*were not run: `python -m pytest -m slow` runs them*"])
    assert "test_slow" not in "".join(line for line in result.stdout.lines if line.startswith("PASSED"))


@pytest.mark.parametrize(("args", "passed"), [
    (("--slow",), 4),                # both tiers
    (("-m", "slow"), 2),             # the slow tier alone (.ci/run)
    (("-m", "not slow"), 2),         # an explicit expression decides alone
    (("t/test_a.py",), 4),           # a named file runs whole
    (("t/test_a.py::test_slow",), 1),
])
def test_the_slow_tier_runs_when_asked_for(suite: pytest.Pytester, args: tuple[str, ...], passed: int) -> None:
    result = _run(suite, *args)
    result.assert_outcomes(passed=passed, deselected=4 - passed if args[0].startswith("-m") else 0)
    assert "were not run" not in result.stdout.str()


def test_a_quick_test_that_imports_litellm_fails_naming_the_mark(suite: pytest.Pytester,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IMPORT_HEAVY", "1")
    result = _run(suite, "--slow", "-k", "quick_importing")
    result.assert_outcomes(passed=1, errors=1, deselected=3)
    result.stdout.fnmatch_lines(["*test_quick_importing_the_heavy_module imported memharness_fake_heavy (3-4 s of CPU*"
                                 "mark it @pytest.mark.slow*"])


def test_a_slow_test_may_import_it(suite: pytest.Pytester) -> None:
    _run(suite, "-m", "slow").assert_outcomes(passed=2, deselected=2)
