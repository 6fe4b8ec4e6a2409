"""A scenario run that ends in error is one terminal line naming ``scenario [strategy]`` once (round 16a noticed
``ERROR: seed [heuristic] s/seed.yaml: seed [heuristic] seeding …``: the result's error carries the name for the
run directory's readers, and the terminal put it in front again). Generated: the scenario's id and the seed field
that makes the run end in error."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import examples
from tests.hostile_cli._support import SEEDED_SQLITE, cli


@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ident=st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True),
       field=st.sampled_from(["priority", "duration"]), value=st.sampled_from(["bogus", "forever", "", "7D ", 3]))
def test_an_error_line_names_its_scenario_run_once(tmp_path_factory: pytest.TempPathFactory,
                                                   capsys: pytest.CaptureFixture[str], ident: str, field: str,
                                                   value: object) -> None:
    case = tmp_path_factory.mktemp("err")
    (case / "s").mkdir()
    text = SEEDED_SQLITE.format(description="an error while seeding", system=f"{field}: {json.dumps(value)}")
    (case / "s" / "x.yaml").write_text(f"id: {ident}\n{text}", encoding="utf-8")
    o = cli(["run", str(case / "s"), "--system", "sqlite", "--out", str(case / "o"), "--no-gates"], capsys)
    assert o.code != 0, o.out + o.err
    (line,) = [x for x in (o.out + o.err).splitlines() if x.startswith("ERROR: ")]
    assert line.count(f"{ident} [heuristic]") == 1, line
    assert f"{field} must be one of" in line, line
