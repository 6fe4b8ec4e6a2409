"""Generated scenario files (Hypothesis): random YAML-ish text and structurally mutated valid scenarios.

Properties: ``load_scenario`` raises nothing but a located ``ScenarioError`` (``file:line: field: what``, one
line), never takes more than 2 s; and a sample of what it accepts replays without an internal error."""

from __future__ import annotations

import copy
import json
import re
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import ScenarioError
from harness.replay import RunConfig, run_suite
from harness.scenario import Scenario, load_scenario
from tests.helpers import examples

SETTINGS = settings(max_examples=examples(50), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
BASE: dict[str, Any] = {
    "description": "d", "tags": ["a"], "clock": "2026-03-02T09:00:00Z",
    "facts": {"terse": {"type": "feedback", "match": ["terse"]}},
    "memories": [{"path": "feedback/t.md", "name": "T", "description": "d", "type": "feedback",
                  "body": "Keep replies terse", "facts": ["terse"], "age": "3d"},
                 {"path": "p/n{i}.md", "repeat": 3, "type": "project", "body": "note {i}"}],
    "steps": [
        {"session": "s1", "turns": [{"user": "I prefer terse replies, remember that"}, {"tool_write": "feedback/x.md"}]},
        {"advance": "25h"},
        {"dream": {"force": True}},
        {"lock": {"pid": "dead", "age": "2h"}},
        {"recall": {"query": "terse replies", "expect": ["terse"], "k": 3}},
        {"forget": {"query": "terse"}},
        {"check": {"facts_absent": ["terse"], "files_absent": ["feedback/t.md"], "index_lines": 3}},
    ],
}
HOSTILE: list[Any] = [
    None, True, 0, -1, 10**30, 1e308, float("inf"), "", " ", "\x00", "a\x07b", "\x1b[31m", "\u2028", "\x85",
    "../x.md", "/etc/passwd.md", "a\\b.md", "n" * 300 + ".md", "CON.md", "MEMORY.md", "x.txt", "9999999999999d",
    "999999999d", "36500d", "-3d", "1.5h", "2026-02-30", "9999-12-31T00:00:00Z", "0001-01-01", "1970-01-01",
    "{i}", "x" * 5000, [], {}, [[[]]], {"a": {"b": {"c": None}}}, ["terse"], ["nope"], {"user": "hi"}, "heuristic",
    "model", "updated", "live", 1001, 100_000_000, 3, 0.5,
]
LOCATED = re.compile(r"^(?P<file>.+?):(?P<line>\d+): (?P<field>[^:\n]+): [^\n]+$")


def _check(path: Path) -> Scenario | None:
    start = time.perf_counter()
    try:
        scenario: Scenario | None = load_scenario(path)
    except ScenarioError as exc:
        message = str(exc)
        assert LOCATED.match(message), message
        assert message.startswith(str(path)), message
        assert message.isprintable(), repr(message)
        scenario = None
    assert time.perf_counter() - start < 2.0
    return scenario


FRAGMENTS = st.sampled_from([
    "steps:", "\n", "  - ", ": ", "advance: 1h", "{", "}", "[", "]", "&a ", "*a", "!!int ", "!!python/object ",
    "? ", "---", "- session: s\n", "memories:", "path: ", "clock: ", "2026-02-30", "9999d", "'", '"', "\\x00",
    "\\ud800", "#", "|", ">", "%YAML 1.1\n", "!!binary ", "!!set ", "<<: *a", "\t", "recall: {query: q, k: ",
])


@SETTINGS
@given(st.lists(st.one_of(FRAGMENTS, st.text(max_size=8)), max_size=40))
def test_random_yamlish_text_gives_a_located_error_or_a_scenario(tmp_path_factory: Any, parts: list[str]) -> None:
    path = tmp_path_factory.mktemp("gen") / "x.yaml"
    path.write_text("".join(parts), encoding="utf-8", errors="surrogatepass")
    _check(path)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    doc = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(doc)[1:]
        if not paths:
            break
        where = draw(st.sampled_from(paths))
        parent = doc
        for key in where[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["replace", "replace", "delete", "wrap", "duplicate"]))
        last = where[-1]
        if action == "replace":
            parent[last] = copy.deepcopy(draw(st.sampled_from(HOSTILE)))
        elif action == "delete":
            del parent[last]
        elif action == "wrap":
            parent[last] = [parent[last]]
        elif isinstance(parent, list):
            parent.append(copy.deepcopy(parent[last]))
        else:
            parent[f"{last}_copy"] = copy.deepcopy(parent[last])
    return doc


ACCEPTED: list[Scenario] = []


@SETTINGS
@given(mutated())
def test_mutated_scenarios_give_a_located_error_or_a_scenario(doc: dict[str, Any]) -> None:
    # no fixture: the next test calls this one itself when xdist ran it on another worker
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.yaml"
        path.write_text(yaml.safe_dump(doc, allow_unicode=False, sort_keys=False), encoding="utf-8")
        scenario = _check(path)
    if scenario is not None and len(ACCEPTED) < 12:
        ACCEPTED.append(scenario)


def test_accepted_mutants_run_without_an_internal_error() -> None:
    """What validate accepts, run can run: a bounded sample of accepted mutants replays with no error status."""
    if not ACCEPTED:  # run alone: collect a deterministic sample first
        test_mutated_scenarios_give_a_located_error_or_a_scenario()
    assert ACCEPTED, "no mutant was accepted: the generator no longer exercises the run path"
    sample = [Scenario(**{**{f: getattr(s, f) for f in Scenario.__dataclass_fields__}, "id": f"mutant-{i}"})
              for i, s in enumerate(ACCEPTED)]
    run = run_suite(sample, RunConfig(("heuristic",)))
    assert len(run.results) == len(sample)
    errors = [r.error for r in run.results if r.status == "error"]
    assert not errors, errors


YAML_TAGS = st.sampled_from([
    "!!bool", "!!int", "!!float", "!!timestamp", "!!binary", "!!null", "!!str", "!!omap", "!!pairs", "!!set",
    "!!seq", "!!map", "!!merge", "!!value", "!!yaml", "!!python/name:os.system", "!!python/object:os.system",
    "!custom", "!", "!<tag:yaml.org,2002:int>", "!<tag:example.com,2000:x>",
])
TAG_VALUES = st.one_of(st.sampled_from(["maybe", "junk", "3", "yes", "~", "0x1F", "1e999", "2026-13-45", "[]", "{}",
                                        "'q'", "-", ".nan", "1_000", "<<"]),
                       st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=6))


@SETTINGS
@given(YAML_TAGS, TAG_VALUES, st.integers(0, 10_000))
def test_any_yaml_tag_on_any_scalar_gives_a_located_error_or_a_scenario(tmp_path_factory: Any, tag: str, value: str,
                                                                        where: int) -> None:
    """Issue 33: every YAML tag and resolver failure (``!!bool maybe`` was a KeyError, ``!!timestamp junk`` an
    AttributeError, ``!!omap 3`` was accepted as text) is a located one-line error or a documented reading."""
    lines = yaml.safe_dump(BASE, sort_keys=False).splitlines()
    scalars = [i for i, line in enumerate(lines) if re.search(r"(:|- ) ?\S", line) and not line.rstrip().endswith(":")]
    i = scalars[where % len(scalars)]
    line = lines[i]
    head = re.match(r"^(\s*(?:- )?(?:[^:\s][^:]*: )?)", line)
    prefix = head.group(1) if head else ""
    lines[i] = f"{prefix}{tag} {json.dumps(value)}" if value.strip() != value or not value else f"{prefix}{tag} {value}"
    path = tmp_path_factory.mktemp("tag") / "x.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _check(path)


COLLECTION_TAGS = st.sampled_from(["!!map", "!!set", "!!seq", "!!omap", "!!pairs"])
FITS = {"!!seq": "list", "!!omap": "list", "!!pairs": "list", "!!map": "mapping", "!!set": "mapping"}


@SETTINGS
@given(COLLECTION_TAGS, st.sampled_from(["text", "list", "mapping"]), st.integers(0, 10_000))
def test_a_collection_tag_on_another_kind_of_node_is_a_located_error(tmp_path_factory: Any, tag: str, kind: str,
                                                                     where: int) -> None:
    """Issue 33: a mapping tag on a list (``tags: !!map [a, b]``) was read as the list, silently. A standard
    collection tag on a node of another kind is now `file:line: yaml: tag !!map on a list`, wherever it sits."""
    lines = yaml.safe_dump(BASE, sort_keys=False, default_flow_style=None).splitlines()
    spots = [i for i, line in enumerate(lines) if re.match(r"^\s*(?:- )?[a-z_]+: \S", line)]
    i = spots[where % len(spots)]
    key = re.match(r"^(\s*(?:- )?[a-z_]+: )", lines[i])
    assert key is not None
    node = {"text": "plain words", "list": "[a, b]", "mapping": "{a: b}"}[kind]
    lines[i] = f"{key.group(1)}{tag} {node}"
    path = tmp_path_factory.mktemp("ctag") / "x.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    if FITS[tag] != kind:
        with pytest.raises(ScenarioError, match=rf"x\.yaml:{i + 1}: yaml: tag {re.escape(tag)} on "):
            load_scenario(path)
    else:
        _check(path)


@pytest.mark.parametrize(("written", "read"), [
    ("42", "42"), ("4.50", "4.50"), ("3.10", "3.10"), ("0x1F", "0x1F"), ("2026-03-02", "2026-03-02"),
    ('"a\\x85b"', "a\x85b"), ('"a\\ufeffb"', "a\ufeffb"), ('"a\\u2028b"', "a\u2028b"), ('"tab\\there"', "tab\there")])
def test_documented_readings_of_turn_text(tmp_path: Path, written: str, read: str) -> None:
    """docs/scenarios.md: *text* is a string or a number, read as written; NEL, U+2028/9, tabs and format characters
    (U+FEFF) are text (scenarios use them to test sanitising); other control characters are refused (above)."""
    path = tmp_path / "t.yaml"
    path.write_text(f"steps:\n  - session: s1\n    turns:\n      - user: {written}\n", encoding="utf-8")
    step = load_scenario(path).steps[0]
    assert step.turns[0].text == read  # type: ignore[attr-defined]


TAG_NAMES = st.one_of(
    st.sampled_from(["!!set", "!!omap", "!!pairs", "!!binary", "!!str", "!!int", "!!python/object/apply:os.system",
                     "!!python/name:os.getcwd", "!!python/tuple", "!"]),
    st.text("abcdefghijklmnopqrstuvwxyz/_.-", min_size=1, max_size=12).map(lambda t: "!" + t),
    st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8).map(lambda t: "!!" + t))


def _collection_spots(lines: list[str]) -> list[int]:
    """Lines whose value is a flow mapping or list (``key: {...}`` / ``key: [...]``, or ``- {...}``)."""
    return [i for i, line in enumerate(lines) if re.match(r"^\s*(?:- )?(?:[a-z_]+: )?[\[{]", line)]


@SETTINGS
@given(TAG_NAMES, st.integers(0, 10_000))
def test_a_tag_on_a_mapping_or_list_is_a_located_error_never_dropped(tmp_path_factory: Any, tag: str,
                                                                     where: int) -> None:
    """Issue 33 (round 4): a tag on a mapping or a list (``steps: !!python/object/apply:os.system``, ``!foo {...}``,
    ``!!set {a, b}`` in a scripted reply) was dropped and the node read as plain. Any tag but the node's own plain
    ``!!map`` / ``!!seq`` (or the non-specific ``!``) is now a located error on that line."""
    lines = yaml.safe_dump(BASE, sort_keys=False, default_flow_style=None, width=1000).splitlines()
    spots = _collection_spots(lines)
    i = spots[where % len(spots)]
    found = re.match(r"^(\s*(?:- )?(?:[a-z_]+: )?)(.*)$", lines[i])
    assert found is not None
    lines[i] = f"{found.group(1)}{tag} {found.group(2)}"
    path = tmp_path_factory.mktemp("tag") / "x.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    if tag == "!":
        _check(path)  # non-specific: the plain node
        return
    with pytest.raises(ScenarioError, match=rf"x\.yaml:{i + 1}: yaml: tag "):
        load_scenario(path)


FREE_MAPS = [("check", {"facts_absent": ["terse"], "system": {"k": "{v}"}}),
             ("recall", {"query": "terse", "expect_event": {"k": "{v}"}}),
             ("recall", {"query": "terse", "expect_details": {"k": "{v}"}}),
             ("memory", {"system": {"k": "{v}"}})]


@SETTINGS
@given(st.sampled_from(FREE_MAPS),
       st.characters(max_codepoint=0x9F).filter(lambda c: not c.isprintable() and c not in "\t\n\r\x85"),
       st.booleans(), st.sampled_from(["value", "key", "merge"]))
def test_free_form_maps_refuse_control_characters_and_merge_keys(tmp_path_factory: Any, spot: tuple[str, Any],
                                                               char: str, inside: bool, what: str) -> None:
    """Issue 33 (round 4): the maps a scenario passes to the system untouched (``check.system``, ``expect_event``,
    ``expect_details``, a memory's ``system``) took control characters and a merge key ``<<`` silently (the key then
    failed at run time with no line). Both are located errors at load time now."""
    kind, body = spot
    text = f"a{char}b" if inside else char
    doc = copy.deepcopy(BASE)
    free = copy.deepcopy(body)
    target = free["system"] if kind in ("check", "memory") and "system" in free else \
        free.get("expect_event") or free.get("expect_details")
    del target["k"]
    if what == "value":
        target["k"] = text
    elif what == "key":
        target[text] = "v"
    else:
        target["<<"] = {"k": "v"}
    if kind == "memory":
        doc["memories"][0]["system"] = free["system"]
    else:
        doc["steps"].append({kind: free})
    path = tmp_path_factory.mktemp("free") / "x.yaml"
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=False, width=1000)
    path.write_text(text.replace("'<<'", "<<"), encoding="utf-8")  # a real merge key: the dumper quotes it
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    message = str(caught.value)
    assert LOCATED.match(message), message
    assert message.isprintable(), message
    assert ("merge keys" in message) if what == "merge" else ("control character" in message), message
