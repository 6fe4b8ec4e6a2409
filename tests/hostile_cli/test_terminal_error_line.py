"""A scenario run that ends in error names ``scenario [strategy]`` once in every output that shows it (round 16a
noticed ``ERROR: seed [heuristic] s/seed.yaml: seed [heuristic] seeding …``: the result's error carries the name
for readers of ``results.jsonl`` alone, and the terminal put it in front again; so did ``summary.md``, the GitHub
annotations, JUnit's message and the HTML report). Generated: the scenario's id and the seed field that makes the
run end in error."""

from __future__ import annotations

import html
import json
import xml.etree.ElementTree as ET

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import examples
from tests.hostile_cli._support import SEEDED_SQLITE, cli


@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ident=st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True),
       field=st.sampled_from(["priority", "duration"]), value=st.sampled_from(["bogus", "forever", "", "7D ", 3]))
def test_an_error_names_its_scenario_run_once_everywhere(tmp_path_factory: pytest.TempPathFactory,
                                                         capsys: pytest.CaptureFixture[str], ident: str, field: str,
                                                         value: object) -> None:
    case = tmp_path_factory.mktemp("err")
    (case / "s").mkdir()
    text = SEEDED_SQLITE.format(description="an error while seeding", system=f"{field}: {json.dumps(value)}")
    (case / "s" / "x.yaml").write_text(f"id: {ident}\n{text}", encoding="utf-8")
    o = cli(["run", str(case / "s"), "--system", "sqlite", "--out", str(case / "o"), "--no-gates"], capsys,
            environ={"GITHUB_ACTIONS": "true"})
    assert o.code != 0, o.out + o.err
    name, said = f"{ident} [heuristic]", f"{field} must be one of"
    (line,) = [x for x in (o.out + o.err).splitlines() if x.startswith("ERROR: ")]
    (note,) = [x for x in (o.out + o.err).splitlines() if x.startswith("::error ")]
    (row,) = [x for x in (case / "o" / "summary.md").read_text(encoding="utf-8").splitlines() if said in x]
    assert row.count(f"`{ident}` [heuristic]") == 1, row
    assert name not in row, row
    error = ET.parse(case / "o" / "junit.xml").find(".//error")
    assert error is not None
    assert said in error.get("message", ""), error.attrib
    assert name not in error.get("message", ""), error.attrib
    page = html.unescape((case / "o" / "report.html").read_text(encoding="utf-8"))
    assert said in page
    assert f"{name} seeding" not in page  # the error's own prefix, before its "seeding (…)"
    for text in (line, note):
        assert text.count(name) == 1, text
        assert said in text, text
    assert json.loads((case / "o" / "results.jsonl").read_text().splitlines()[0])["error"].startswith(name)
