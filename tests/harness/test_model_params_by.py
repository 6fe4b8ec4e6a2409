"""``model_params`` per purpose (``{purpose: {max_tokens: …}}``): read, dumped, refused where written, and checked
against every request of a step — the form that pins a step whose model calls differ (an SQLite session step makes
the extraction call and the episode call)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.cli._report_cmds import scenario_schema
from harness.errors import ScenarioError
from harness.replay._expect import check_params_by
from harness.scenario import load_scenario, scenario_to_yaml
from harness.scenario._load_more import MODEL_PARAMS
from tests.helpers import examples

_PURPOSES = st.text(st.characters(categories=("L", "N", "P", "S"), include_characters=" "), min_size=1,
                    max_size=30).filter(lambda p: p not in MODEL_PARAMS)
"""A purpose: any one-line printable name (written JSON-quoted: ``"sqlite-memory-extract"``, ``"a: b"``…)."""
_VALUES = {"timeout_s": st.integers(0, 600) | st.floats(0, 600, allow_nan=False, allow_infinity=False),
           "max_tokens": st.integers(0, 1 << 20),
           "temperature": st.floats(0, 2, allow_nan=False, allow_infinity=False)}
_PARAMS = st.fixed_dictionaries({}, optional=_VALUES)
_BY = st.dictionaries(_PURPOSES, _PARAMS, min_size=1, max_size=4)

_HEAD = "description: per-purpose params\ndesign: s1-sqlite\nstrategies: [model]\nclock: 2026-03-02T09:00:00Z\nsteps:\n"
_FORMS = {  # where the key is written: (the step's text with PARAMS, the field the loader names)
    "recall": ("  - recall:\n      query: q\n      expect_model_params:\nPARAMS", "steps[0].recall.expect_model_params"),
    "session": ("  - session: s\n    turns: [{user: hi}]\n    expect_extract:\n      model_params:\nPARAMS",
                "steps[0].expect_extract.model_params"),
}


def _schema_accepts(form: str, params: dict[str, Any]) -> bool:
    """What the JSON Schema an editor validates against says of the scenario's ``model_params`` (True when
    jsonschema, of the dev extra, is missing)."""
    try:
        import jsonschema
    except ImportError:
        return True
    step = ({"recall": {"query": "q", "expect_model_params": params}} if form == "recall" else
            {"session": "s", "turns": [{"user": "hi"}], "expect_extract": {"model_params": params}})
    data = {"description": "d", "design": "s1-sqlite", "strategies": ["model"], "clock": "2026-03-02T09:00:00Z",
            "steps": [step]}
    return jsonschema.Draft202012Validator(json.loads(scenario_schema())).is_valid(data)


def _key(purpose: str) -> str:
    return json.dumps(purpose, ensure_ascii=False)


def _block(entries: list[str], indent: int) -> str:
    return "".join(" " * indent + e + "\n" for e in entries)


def _scenario(form: str, entries: list[str]) -> str:
    step, _ = _FORMS[form]
    return _HEAD + step.replace("PARAMS", _block(entries, 8))


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(form=st.sampled_from(sorted(_FORMS)), by=_BY)
def test_the_per_purpose_form_is_read_and_round_trips(tmp_path: Path, form: str, by: dict[str, dict[str, Any]]) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(_scenario(form, [f"{_key(p)}: {json.dumps(v)}" for p, v in by.items()]))
    scenario = load_scenario(path)
    outcome = scenario.steps[0].outcome
    assert outcome.model_params_by == by
    assert _schema_accepts(form, by)
    assert outcome.model_params == {}
    again = tmp_path / "again.yaml"
    again.write_text(scenario_to_yaml(scenario))
    assert load_scenario(again).steps[0] == scenario.steps[0]


_BAD = {  # how one entry of a per-purpose mapping is wrong → what the loader says, at the entry's line and key
    "scalar under a purpose": (lambda p: (p, f"{_key(p)}: 5"), r"expected a mapping of parameters"),
    "a parameter as a purpose": (lambda p: ("max_tokens", "max_tokens: 1024"),
                                 r"'max_tokens' is a parameter, not a purpose"),
    "a mapping under a parameter": (lambda p: ("timeout_s", "timeout_s: {max_tokens: 1}"),
                                    r"'timeout_s' is a parameter, not a purpose"),
    "the purpose inside": (lambda p: (p, f"{_key(p)}: {{purpose: x}}"),
                           r"unknown parameter 'purpose' .*this mapping's key"),
    "an unknown parameter": (lambda p: (p, f"{_key(p)}: {{top_p: 1}}"), r"unknown parameter 'top_p' \(known: timeout_s, "),
    "a list of parameters": (lambda p: (p, f"{_key(p)}: [max_tokens]"), r"expected a mapping of parameters"),
}


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(form=st.sampled_from(sorted(_FORMS)), by=_BY, bad=st.sampled_from(sorted(_BAD)), where=st.integers(0, 4),
       purpose=_PURPOSES)
def test_a_bad_per_purpose_entry_is_one_located_line(tmp_path: Path, form: str, by: dict[str, dict[str, Any]],
                                                     bad: str, where: int, purpose: str) -> None:
    make, message = _BAD[bad]
    key, entry = make(purpose)
    good = [f"{_key(p)}: {json.dumps(v)}" for p, v in by.items() if p != key]
    where = min(where, len(good))
    alone = bad == "scalar under a purpose" and not good
    if alone:  # alone, a scalar is the flat form: an unknown parameter, reported on the mapping
        message = rf"unknown parameter {re.escape(repr(key))}"
    entries = [*good[:where], entry, *good[where:]]
    path = tmp_path / "p.yaml"
    text = _scenario(form, entries)
    path.write_text(text)
    line = text.splitlines().index(" " * 8 + entry) + 1
    field = _FORMS[form][1] + ("" if alone else f".{key}".replace(":", "\\x3a"))  # a field never holds a colon
    import yaml

    params = {**{p: v for p, v in by.items() if p != key}, **yaml.safe_load(entry)}  # the entry: words and ints
    assert not _schema_accepts(form, params)  # the schema refuses what the loader refuses
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    said = str(err.value)
    assert "\n" not in said
    assert re.fullmatch(rf"{re.escape(str(path))}:{line}: {re.escape(field)}: {message}.*", said), said


_REQUEST = st.fixed_dictionaries({"purpose": _PURPOSES | st.none(), **{k: v | st.none() for k, v in _VALUES.items()}})


def _agrees(request: dict[str, Any], want: dict[str, Any]) -> bool:
    return all(k in request and request[k] == v and isinstance(request[k], bool) == isinstance(v, bool)
               for k, v in want.items())


@settings(max_examples=examples(300), deadline=None)
@given(by=_BY, requests=st.lists(_REQUEST, max_size=5), data=st.data())
def test_every_request_has_a_named_purpose_with_its_params_and_every_purpose_is_requested(
        by: dict[str, dict[str, Any]], requests: list[dict[str, Any]], data: st.DataObject) -> None:
    # half the time the requests are drawn from the expectation itself (a pass, or a near miss)
    if data.draw(st.booleans()):
        requests = [{"purpose": p, **v, **data.draw(st.fixed_dictionaries({}, optional=_VALUES))}
                    for p, v in by.items() if data.draw(st.booleans())] + requests[:1]
    failures: list[str] = []

    def check(ok: bool, message: str) -> bool:
        if not ok:
            failures.append(message)
        return ok

    verdict = check_params_by(check, by, requests)
    named = all(r["purpose"] in by and _agrees(r, by[r["purpose"]]) for r in requests)
    seen = set(by) <= {r["purpose"] for r in requests}
    assert verdict == (named and seen) == (not failures)
    assert all("\n" not in f for f in failures)
    assert len([f for f in failures if f.startswith("expected a model request of purpose")]) == len(
        set(by) - {r["purpose"] for r in requests})


SESSION = """\
description: both calls of an SQLite session step, pinned per purpose
design: s1-sqlite
strategies: [model]
scripted_model:
  - {items: [{type: PREFERENCE, subject: user, predicate: editor, content: "The user edits code in Helix",
              importance: 0.9, duration: permanent}]}
  - {summary: "The user named their editor.", goal: "editor", outcome: success, entities: [], tools_used: []}
clock: 2026-03-02T09:00:00Z
steps:
  - session: s1
    turns:
      - user: "I edit all of my source code in Helix every day"
      - assistant: "Noted."
    expect_extract: {status: completed, written: 1, model_params: PARAMS}
"""


@pytest.mark.parametrize(("params", "code"), [
    ("{sqlite-memory-extract: {max_tokens: 1024, timeout_s: 30}, sqlite-memory-episode: {max_tokens: 512}}", 0),
    ("{sqlite-memory-extract: {}, sqlite-memory-episode: {}}", 0),  # requested, nothing pinned
    ("{timeout_s: 30}", 0),  # the flat form still applies to every request
    ("{max_tokens: 1024}", 1),  # ... which is why it cannot pin the extraction's budget: the episode asks for 512
    ("{sqlite-memory-extract: {max_tokens: 1023}, sqlite-memory-episode: {max_tokens: 512}}", 1),
    ("{sqlite-memory-extract: {max_tokens: 1024}}", 1),  # the episode request's purpose is not named
    ("{sqlite-memory-extract: {}, sqlite-memory-episode: {}, sqlite-memory-decompose: {}}", 1),  # never requested
])
def test_a_session_step_pins_each_call_by_purpose(tmp_path: Path, params: str, code: int) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SESSION.replace("PARAMS", params))
    assert main(["run", str(path), "--no-gates", "--out", str(tmp_path / "out")], environ={}) == code
