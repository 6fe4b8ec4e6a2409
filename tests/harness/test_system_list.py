"""``memharness run --system A,B,...``: shipped systems and systems of your own in one run and one report (issue 35:
"evaluate your own system" ends in a side-by-side report, and before this a system of your own could only run alone)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.cli import main
from harness.errors import HarnessError
from harness.replay import system_list
from harness.systems import SYSTEMS
from tests.harness.conftest import SCENARIOS

OWN = "tests.example_system:factory"


def test_a_list_puts_your_own_system_beside_the_shipped_ones(tmp_path: Path) -> None:
    assert main(["run", str(SCENARIOS / "recall"), "--system", f"reference,sqlite,{OWN}", "--out", str(tmp_path / "o"),
                 "--no-gates", "--jobs", "1"], environ={}) in (0, 1)
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    columns = list(summary["strategies"])
    assert {"heuristic", "heuristic@sqlite", f"heuristic@{OWN}"} <= set(columns)
    assert summary["meta"]["systems"] == ["reference", "sqlite", OWN]
    assert summary["meta"]["system"] == "reference"
    pairs = {(c["a"], c["b"]) for c in summary["comparisons"] if c["metric"] == "recall.f1"}
    assert ("heuristic", f"heuristic@{OWN}") in pairs  # paired with the reference, where probes match
    html = (tmp_path / "o" / "report.html").read_text()
    assert f'data-strategy="heuristic@{OWN}"' in html
    own = [json.loads(line) for line in (tmp_path / "o" / "results.jsonl").read_text().splitlines()
           if json.loads(line)["strategy"].endswith(f"@{OWN}")]
    assert own
    assert {r["status"] for r in own} <= {"passed", "failed", "skipped"}


def _valid(item: str) -> bool:
    return item in ("all", *SYSTEMS) or (":" in item and item.partition(":")[0] not in SYSTEMS)


@given(st.lists(st.sampled_from(["all", *SYSTEMS, "sqlite:seed", OWN, "mod:f", "nocolon", "", " reference "]),
                min_size=1, max_size=4))
def test_a_list_is_parsed_or_refused_in_one_line(items: list[str]) -> None:
    text, stripped = ",".join(items), [x.strip() for x in items]
    if len(items) > 1 and (len(set(stripped)) < len(stripped) or not all(map(_valid, stripped))):
        with pytest.raises(HarnessError, match=rf"^--system {re.escape(text)}: [^\n]+$"):
            system_list(text)
        return
    got = system_list(text)
    if len(items) == 1 and stripped[0] != "all":
        assert got is None  # one system: as before
        return
    assert got is not None
    every, names, own = got
    assert every == ("all" in stripped)
    assert names == [x for x in stripped if x in SYSTEMS]
    assert own == [x for x in stripped if x not in ("all", *SYSTEMS)]


def test_compare_of_two_systems_names_the_list_that_runs_both_unless_one_is_a_variant(tmp_path: Path) -> None:
    from harness.cli._commands import _same_primary

    with pytest.raises(HarnessError, match=r"the candidate's mypkg\.m:f; compare runs of the same --system \(or run "
                                           r"both in one: --system reference,mypkg\.m:f names"):
        _same_primary({"system": "reference"}, {"system": "mypkg.m:f"}, tmp_path)
    with pytest.raises(HarnessError, match=r"the candidate's sqlite; compare runs of the same --system$"):
        _same_primary({"system": "reference"}, {"system": "sqlite:seed"}, tmp_path)  # a variant runs alone
