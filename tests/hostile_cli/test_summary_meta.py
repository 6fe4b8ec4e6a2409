"""``summary.json``'s meta fields that the readers use, of a wrong type (hostile probe, round 13, found by CI's
run-directory mutations: ``meta.system = true`` made ``compare`` say "the candidate's columns are system True",
naming no line). Now each is text (``systems`` a list of names) or null, else one located line; since round 19 text
holds no control character and ``trace_url`` keeps ``MEMHARNESS_TRACE_URL``'s rule. Generated values."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.reporting._stored import META_READ, trace_url_problem
from tests.harness.conftest import SCENARIOS
from tests.hostile_cli._support import cli

LOCATED_META = "summary.json:{line}: meta.{key}: expected"
VALUES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=6),
                   st.lists(st.one_of(st.text(max_size=3), st.integers()), max_size=2),
                   st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
                   st.dictionaries(st.text(max_size=2), st.dictionaries(st.sampled_from(["model", "mode"]),
                                                                        st.text(max_size=3), max_size=2), max_size=2))


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from harness.cli import main

    out = tmp_path_factory.mktemp("meta") / "base"
    assert main(["run", str(SCENARIOS / "recall" / "multi-fact.yaml"), "--no-gates", "--out", str(out)],
                environ={}) == 0
    return out


def _clean(value: Any) -> bool:
    """No text inside ``value`` (keys too) holds a control character (round 19: the report shows every meta field)."""
    if isinstance(value, str):
        return not re.search("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]", value)
    items = [*value, *value.values()] if isinstance(value, dict) else value if isinstance(value, list) else []
    return all(_clean(v) for v in items)


def _fits(key: str, value: Any) -> bool:
    if value is None:
        return True
    if not _clean(value):
        return False
    if key == "trace_url":  # round 19: held to MEMHARNESS_TRACE_URL's rule when read back
        return isinstance(value, str) and trace_url_problem(value) is None
    if key == "systems":
        return isinstance(value, list) and all(isinstance(x, str) for x in value)
    if key == "models":
        return isinstance(value, dict) and all(isinstance(x, dict) for x in value.values())
    return isinstance(value, str)


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(key=st.sampled_from(META_READ), value=VALUES)
def test_a_meta_field_of_the_wrong_type_is_one_located_line(base: Path, key: str, value: Any,
                                                            tmp_path_factory: pytest.TempPathFactory,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    cand = tmp_path_factory.mktemp("cand") / "run"
    shutil.copytree(base, cand)
    summary = json.loads((cand / "summary.json").read_text(encoding="utf-8"))
    summary["meta"][key] = value
    text = json.dumps(summary, indent=2)
    (cand / "summary.json").write_text(text, encoding="utf-8")
    line = next(n for n, row in enumerate(text.splitlines(), 1) if row.strip().startswith(f'"{key}":'))
    for argv in (["compare", str(base), str(cand)], ["report", str(cand)]):
        o = cli(argv, capsys)
        assert "internal error" not in o.err, o.err
        if _fits(key, value):
            assert "meta." not in o.err, o.err
            continue
        assert o.code == 2, (argv[0], o.err)  # old code: compare named no line ("system True"), or read it as text
        (error,) = o.err.splitlines()
        assert error.startswith(f"memharness: {cand}/" + LOCATED_META.format(line=line, key=key)), error
