"""A gates file (``--gates``, ``<suite>/gates.toml``), generated (hostile probe, round 12): every refusal names the
file and the line, ``<file>:<line>: gate <n>: …``. On the old code each named the file and the gate but no line
(``g.toml: gate 3: 'min' must be a finite number``), and ``gate = 5`` named neither."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.evaluation import load_gates
from harness.evaluation._gates import GateFileError
from tests.helpers import toml_value

SCALAR = st.one_of(st.booleans(), st.integers(-5, 5), st.floats(), st.text(max_size=6),
                   st.sampled_from(["recall.precision", "scenarios.failed", "heuristic", "bm25", "baseline", "a\nb"]))
VALUE = st.one_of(SCALAR, st.lists(SCALAR, max_size=2), st.dictionaries(st.text(max_size=3), SCALAR, max_size=2))
GOOD = {"metric": st.sampled_from(["recall.precision", "scenarios.failed", "recall.bogus"]),
        "strategy": st.sampled_from(["heuristic", "bm25", "nope"]), "min": st.floats(0, 1), "max": st.integers(0, 3),
        "max_drop": st.floats(0, 1), "vs": st.sampled_from(["baseline", "heuristic"]), "name": st.text(max_size=5),
        "system": st.sampled_from(["sqlite", "reference"])}
GATE = st.one_of(st.fixed_dictionaries({}, optional={k: st.one_of(v, VALUE) for k, v in GOOD.items()}),
                 st.dictionaries(st.sampled_from([*GOOD, "minimum", "x"]), VALUE, max_size=4))


def _document(gates: list[dict[str, object]], comments: bool) -> str:
    out = []
    for gate in gates:
        out.append("# a gate\n[[gate]]" if comments else "[[gate]]")
        out += [f"{k} = {toml_value(v)}" for k, v in gate.items()]
        out.append("")
    return "\n".join(out) + "\n"


DOCUMENT = st.one_of(st.builds(_document, st.lists(GATE, max_size=4), st.booleans()),
                     st.builds(lambda v: f"gate = {toml_value(v)}\n", VALUE),
                     st.builds(lambda k, v: f"{k} = {toml_value(v)}\n", st.sampled_from(["gates", "x"]), VALUE))
LOCATED = re.compile(r"^\S*g\.toml:(\d+): ([^:\n]+): ")


@settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(text=DOCUMENT)
def test_every_refusal_names_the_line(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    path = tmp_path_factory.mktemp("gates") / "g.toml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        load_gates(path)
    except GateFileError as exc:
        message = str(exc)
    else:
        return
    match = LOCATED.match(message)
    assert match, message
    assert "\n" not in message
    assert 1 <= int(match.group(1)) <= max(1, len(text.splitlines())), message


def test_the_line_is_the_fields_own(tmp_path: Path) -> None:
    path = tmp_path / "g.toml"
    path.write_text('[[gate]]\nmetric = "scenarios.failed"\nmax = 0\n\n[[gate]]\nmetric = "recall.precision"\n'
                    'strategy = "heuristic"\nmin = "high"\n', encoding="utf-8")
    with pytest.raises(GateFileError, match=r"g\.toml:8: gate 2: 'min' must be a finite number, got 'high'"):
        load_gates(path)
