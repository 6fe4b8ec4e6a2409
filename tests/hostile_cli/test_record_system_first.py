"""``memharness record --system SPEC`` says a malformed SPEC before it probes the model server (hostile probe, round
13: ``record --system ,`` reported the unreachable server instead). Generated specs over the spec's own alphabet."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.harness.conftest import SCENARIOS
from tests.hostile_cli._support import cli

NOWHERE = "http://127.0.0.1:9/v1"  # nothing listens on the discard port: the probe fails at once
SPECS = st.one_of(st.text(alphabet="ab:, ", min_size=1, max_size=6),
                  st.lists(st.sampled_from(["", "all", "reference", "sqlite", "sqlite:seed", "a:b", ":", "x"]),
                           min_size=1, max_size=3).map(",".join).filter(bool))  # "" is no --system, for run too


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(spec=SPECS)
def test_a_malformed_system_is_said_before_the_model_server(spec: str, tmp_path_factory: pytest.TempPathFactory,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path_factory.mktemp("rec")
    o = cli(["record", str(SCENARIOS / "model"), "--system", spec, "--model", "openai/x", "--api-base", NOWHERE,
             "--out", str(out / "o")], capsys)
    assert o.code == 2, o.err
    (line,) = o.err.splitlines()
    items = [x.strip() for x in spec.split(",")]
    module, colon, factory = spec.partition(":")
    lone_bad = len(items) == 1 and items[0] != "all" and module not in ("reference", "sqlite", "mem0") and not (
        colon and module.strip() and factory.strip(" :"))  # neither a shipped name (NAME:VARIANT) nor module:factory
    if "" in items or len(set(items)) < len(items) or lone_bad:
        assert line.startswith(f"memharness: --system {spec}"), line  # old code: "record: no model answers at ..."
    if not line.startswith(f"memharness: --system {spec}"):
        assert "no model answers at" in line  # a well-formed spec goes on to the probe
