"""``memharness cassettes status`` on entries the loader accepts (round 20, found by the fix20 helper): an entry
without ``purpose`` whose prompt version is stale was ``internal error: KeyError: 'purpose'``, and a stale entry's
text (purpose, scenario, prompt version) reached the terminal raw."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import examples
from tests.hostile_cli._support import cli

SETTINGS = settings(max_examples=examples(40), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
TEXT = st.text(st.sampled_from([*"ab _-@+", "\x1b", "\x07", "\u2028", "\u202e", "\x85", "\r"]), max_size=8)


@SETTINGS
@given(purpose=st.none() | TEXT, scenario=st.none() | TEXT, step=st.none() | st.integers(0, 9), stale=TEXT,
       error=st.booleans())
def test_status_lists_every_stale_entry_on_one_printable_line(purpose: str | None, scenario: str | None,
                                                               step: int | None, stale: str, error: bool,
                                                               tmp_path_factory: pytest.TempPathFactory,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    entry: dict[str, object] = {"key": "a" * 64, "model": "m", "prompt_version": f"recall_system@{stale}0"}
    entry |= {k: v for k, v in (("purpose", purpose), ("scenario", scenario), ("step", step)) if v is not None}
    entry |= {"error": {"reason": "timeout", "message": "m"}} if error else \
        {"response": {"text": "{}", "model": "m", "input_tokens": 1, "output_tokens": 1, "latency_ms": 1.0}}
    directory = tmp_path_factory.mktemp("set")
    (directory / "cassette.jsonl").write_text(json.dumps(entry) + "\n", encoding="utf-8")
    o = cli(["cassettes", "status", str(directory)], capsys)
    assert (o.code, o.err) == (1, ""), (o.code, o.err)
    lines = o.out.splitlines()
    assert len(lines) == 2, o.out
    assert lines[0].startswith("1 entries in "), o.out
    assert not RAW.search(o.out), repr(o.out)
    assert lines[1].startswith(f"  {'a' * 16} "), lines[1]
