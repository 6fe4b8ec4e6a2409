from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.harness.conftest import SCENARIOS

pytest_plugins = ["pytester"]


def test_scenarios_become_test_items_with_trace_ids(pytester: pytest.Pytester) -> None:
    suite = pytester.path / "suite"
    suite.mkdir()
    (suite / "ok.yaml").write_text((SCENARIOS / "forget" / "one-entry-of-many.yaml").read_text())
    (suite / "bad.yaml").write_text(
        "facts: {t: {type: user, match: [vim]}}\n"
        "memories: [{path: user/a.md, type: user, body: uses vim}]\n"
        "steps:\n  - check: {facts_absent: [t]}\n")
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest_inprocess("--memharness", "-p", "no:cacheprovider", str(suite), f"--junitxml={junit}")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*bad.yaml: step 0 (check, line 4): fact t is still covered*"])
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    props = {p.get("name"): p.get("value") for p in cases["suite/ok[heuristic]"].iter("property")}
    assert len(props["otel.trace_id"]) == 32


def test_gate_failure_fails_the_session(pytester: pytest.Pytester, tmp_path: Path) -> None:
    gates = tmp_path / "gates.toml"
    gates.write_text('[[gate]]\nmetric = "forget.recall"\nmin = 2\n')
    result = pytester.runpytest_inprocess("--memharness", "-p", "no:cacheprovider", str(SCENARIOS / "forget"),
                                          f"--memharness-gates={gates}")
    result.assert_outcomes(passed=4)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*memharness GATE FAILED: heuristic forget.recall >= 2.0*"])
