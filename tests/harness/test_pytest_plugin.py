from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import harness.evaluation
import harness.replay
import harness.reporting
from tests.harness.conftest import SCENARIOS

# imported here so pytester's in-process runs reuse them: numpy cannot be imported twice in one process
PRELOADED = (harness.evaluation, harness.replay, harness.reporting)

pytest_plugins = ["pytester"]


def _inprocess(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A pytest session in this process. It finds harness and hypothesis already imported without assertion
    rewriting (this suite loads its plugins by name: pyproject's addopts), and would warn that it cannot rewrite
    them: a fact about the test process, not about the plugin, so it is filtered."""
    return pytester.runpytest_inprocess("-W", "ignore::pytest.PytestAssertRewriteWarning", *args)


def test_scenarios_become_test_items_with_trace_ids(pytester: pytest.Pytester) -> None:
    suite = pytester.path / "suite"
    suite.mkdir()
    (suite / "ok.yaml").write_text((SCENARIOS / "forget" / "one-entry-of-many.yaml").read_text())
    (suite / "bad.yaml").write_text(
        "facts: {t: {type: user, match: [vim]}}\n"
        "memories: [{path: user/a.md, type: user, body: uses vim}]\n"
        "steps:\n  - check: {facts_absent: [t]}\n")
    junit = pytester.path / "junit.xml"
    result = _inprocess(pytester, "--memharness", "-p", "no:cacheprovider", str(suite), f"--junitxml={junit}")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*bad.yaml: scenario suite/bad ?heuristic? failed:",
                                 "  step 0 (check, line 4): fact t is still covered"])
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    props = {p.get("name"): p.get("value") for p in cases["suite/ok[heuristic]"].iter("property")}
    assert len(props["otel.trace_id"]) == 32


def test_a_session_without_pytest_xdist_starts(pytester: pytest.Pytester) -> None:
    """xdist is a dev extra: the entry-point plugin must not break a pytest that lacks it (its xdist hook is
    optional), with or without --memharness."""
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    (pytester.path / "ok.yaml").write_text((SCENARIOS / "forget" / "one-entry-of-many.yaml").read_text())
    plain = _inprocess(pytester, "-p", "no:xdist", "-p", "no:cacheprovider", "test_plain.py")
    plain.assert_outcomes(passed=1)
    scenarios = _inprocess(pytester, "-p", "no:xdist", "-p", "no:cacheprovider", "--memharness", "ok.yaml")
    scenarios.assert_outcomes(passed=1)
    assert "INTERNALERROR" not in plain.stdout.str() + scenarios.stdout.str()


@pytest.mark.slow
def test_gate_failure_fails_the_session(pytester: pytest.Pytester, tmp_path: Path) -> None:
    gates = tmp_path / "gates.toml"
    gates.write_text('[[gate]]\nmetric = "forget.recall"\nmin = 2\n')
    result = _inprocess(pytester, "--memharness", "-p", "no:cacheprovider", str(SCENARIOS / "forget"),
                                          f"--memharness-gates={gates}")
    result.assert_outcomes(passed=len(list((SCENARIOS / "forget").glob("*.yaml"))))
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*memharness GATE FAILED: heuristic forget.recall >= 2.0*"])


SHIPPED = [str(SCENARIOS / "recall" / "type-user.yaml"), str(SCENARIOS / "recall" / "multi-fact.yaml"),
           str(SCENARIOS / "model" / "fallback-timeout.yaml")]


@pytest.mark.slow
def test_shipped_scenarios_pass_with_both_strategies_under_xdist_and_print_the_summary(
        pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    # a subprocess, as a user runs it; two xdist workers each replay their share and the controller aggregates
    result = pytester.runpytest_subprocess("--memharness", "-p", "no:cacheprovider", "-rs", "-n", "2",
                                           "--memharness-strategy", "heuristic,model", *SHIPPED)
    # the shipped cassettes are found without --memharness-cassettes; the model-only scenario is skipped for
    # heuristic with its reason, never dropped
    result.assert_outcomes(passed=5, skipped=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines([
        "*memharness summary*",
        "PASSED — 5/5 scenario runs passed*",
        "*heuristic*model*",
        "scenarios passed*2/2*3/3*",
        "recall.f1*",
        "model − heuristic recall.f1: * significant*",
    ])
    result.stdout.fnmatch_lines(["SKIPPED*fallback-timeout runs only with strategies model (not heuristic)*"])


def test_a_failure_is_a_few_lines_without_traceback(pytester: pytest.Pytester) -> None:
    (pytester.path / "bad.yaml").write_text(
        "facts: {t: {type: user, match: [vim]}}\n"
        "memories: [{path: user/a.md, type: user, body: uses vim}]\n"
        "steps:\n  - check: {facts_absent: [t]}\n")
    result = _inprocess(pytester, "--memharness", "-p", "no:cacheprovider", "--memharness-strategy",
                                          "heuristic,model", str(pytester.path / "bad.yaml"))
    text = result.stdout.str()
    assert "Traceback" not in text
    assert "runtest" not in text  # no frames of the plugin
    section = text.split("= FAILURES =", 1)[1].split("memharness summary", 1)[0]
    assert len(section.strip().splitlines()) <= 8
    result.stdout.fnmatch_lines(["*bad.yaml: scenario bad ?heuristic? failed:", "  step 0 (check, line 4): fact t*"])
    (pytester.path / "broken.yaml").write_text("steps: 3\n")
    broken = _inprocess(pytester, "--memharness", "-p", "no:cacheprovider", str(pytester.path / "broken.yaml"))
    broken.stdout.fnmatch_lines(["*broken.yaml:1: steps: expected a list*"])  # a bad file: its one-line error
    assert "Traceback" not in broken.stdout.str()


def test_an_unknown_strategy_is_a_usage_error_as_in_the_cli(pytester: pytest.Pytester) -> None:
    suite = pytester.path / "suite"
    suite.mkdir()
    (suite / "ok.yaml").write_text((SCENARIOS / "forget" / "one-entry-of-many.yaml").read_text())
    result = _inprocess(pytester, "--memharness", "-p", "no:cacheprovider", str(suite),
                        "--memharness-strategy", "heuristc")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--memharness-strategy: unknown strategy 'heuristc'; expected one of heuristic*"])


def test_a_bad_gates_file_is_a_usage_error_before_any_test(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """Found by the sixth blind probe: a bad --memharness-gates was reported only after every test had run."""
    gates = tmp_path / "gates.toml"
    gates.write_text('[[gate]]\nmetric = "recall.nope"\nmin = 2\n')
    result = _inprocess(pytester, "--memharness", "-p", "no:cacheprovider", str(SCENARIOS / "forget"),
                        f"--memharness-gates={gates}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "unknown metric 'recall.nope'" in result.stderr.str()
    assert " passed" not in result.stdout.str()


def test_a_gate_nothing_measured_is_skipped_not_passed(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """As the CLI says it (the sixth blind probe: the plugin said 'passed (value None)')."""
    gates = tmp_path / "gates.toml"
    gates.write_text('[[gate]]\nmetric = "dedupe.retention"\nmin = 0.5\n')
    result = _inprocess(pytester, "--memharness", "-p", "no:cacheprovider", str(SCENARIOS / "forget"),
                        f"--memharness-gates={gates}")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*memharness gate skipped: *dedupe.retention*not measured*"])
    assert "value None" not in result.stdout.str()
