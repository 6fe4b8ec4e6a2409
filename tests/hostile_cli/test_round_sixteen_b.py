"""Round 16b (blind, generated): YAML mutated at the node level, and lines in TOML and JSON files.

1. A tag written on a mapping key was dropped: ``!!binary dream: {force: true}``, ``!!python/name:os.system match:
   [...]``, ``!foo user: hi`` were read as the plain keys ``dream``, ``match``, ``user`` and the scenario was valid (a
   node-level mutation fuzzer of the shipped scenarios: 40 of 3,400 files accepted so). Tags on values were already
   read or refused; a key's tag was never looked at. Now a key with a tag (any but ``!!str``) is one located line,
   ``file:line: field: tag !!binary on a key (…)``.
2. (below, 3.) Lines counted with ``str.splitlines()`` in TOML and JSON files.

The plug-in find is in test_round_sixteen_b_plugins.py, the JSON readers' in test_round_sixteen_b_json.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.harness.conftest import SCENARIOS
from tests.helpers import examples
from tests.hostile_cli._support import LOCATED, load_error_at

SETTINGS = settings(max_examples=examples(60), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
SHIPPED = sorted(SCENARIOS.rglob("*.yaml"))
_STANDARD = ["int", "float", "bool", "null", "binary", "timestamp", "value", "yaml", "merge", "python/name:os.system",
             "python/object/apply:os.system", "python/tuple", "python/str"]
TAGS = st.one_of(st.sampled_from([f"tag:yaml.org,2002:{t}" for t in _STANDARD]),
                 st.from_regex(r"![a-z][a-z0-9]{0,8}", fullmatch=True),
                 st.from_regex(r"tag:example\.com,2026:[a-z]{1,8}", fullmatch=True))


def _keys(node: yaml.Node, out: list[yaml.ScalarNode]) -> list[yaml.ScalarNode]:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                out.append(key)
            _keys(value, out)
    elif isinstance(node, yaml.SequenceNode):
        for child in node.value:
            _keys(child, out)
    return out


@SETTINGS
@given(data=st.data(), tag=TAGS)
def test_a_tag_on_a_mapping_key_is_a_located_error(data: st.DataObject, tag: str, tmp_path: Path) -> None:
    source = data.draw(st.sampled_from(SHIPPED), label="scenario")
    root = yaml.compose(source.read_text(encoding="utf-8"))
    assert root is not None
    keys = _keys(root, [])
    index = data.draw(st.integers(0, len(keys) - 1), label="key")
    key = keys[index]
    key.tag = tag
    key.style = "'"  # quoted, so the serialiser always writes the tag
    path = tmp_path / "tagged.yaml"
    text = yaml.serialize(root, allow_unicode=True, width=10**6)
    path.write_text(text, encoding="utf-8")
    line = _keys(yaml.compose(text), [])[index].start_mark.line + 1  # where the tagged key is in the file written
    load_error_at(path, line, f"{tag} on key {key.value!r} (from {source.name})")  # the key's own line (its tag)


# 3. A line break TOML and JSON do not count, in a comment or a string, moved every line named after it.
#
# The gates file, a cassette shelf's ``sets.toml``, the mutant catalogue and ``cassette-meta.json`` found the line of
# a key with ``str.splitlines()``, which also breaks at U+2028, U+2029 and U+0085: TOML allows them in comments and
# strings, JSON in strings. ``# note<U+2028>…`` above a gate whose ``min`` is wrong named line 6 for line 4. Now lines
# are split at "\n" only (``harness.scenario._toml.file_lines``), as the parsers and editors count them.

_BREAKS = st.sampled_from(["\u2028", "\u2029", "\x85"])
_NOTE = st.lists(st.one_of(_BREAKS, st.sampled_from(["a", " ", "é", "\t", "#"])), max_size=8).map("".join)


@SETTINGS
@given(before=st.lists(st.tuples(_NOTE, st.booleans()), max_size=4), bad=st.sampled_from(
    [("min", '"high"'), ("max", "nan"), ("metric", "5"), ("colour", '"red"')]), crlf=st.booleans())
def test_a_gate_error_names_its_line_whatever_the_comments_hold(
        before: list[tuple[str, bool]], bad: tuple[str, str], crlf: bool, tmp_path: Path) -> None:
    from harness.evaluation._gates import GateFileError, load_gates

    lines: list[str] = []
    for note, as_gate in before:  # comments, and valid gates with comments, holding the breaks
        lines += [f"# {note}", "[[gate]]", f'metric = "recall.f1"  # {note}', f"min = 0.1 #{note}"] if as_gate \
            else [f"# {note}"]
    lines += ["[[gate]]", 'metric = "recall.precision"' if bad[0] != "metric" else "# no metric yet", f"{bad[0]} = {bad[1]}"]
    path = tmp_path / "gates.toml"
    path.write_bytes(("\r\n" if crlf else "\n").join(lines).encode("utf-8") + b"\n")
    with pytest.raises(GateFileError) as caught:
        load_gates(path)
    message = str(caught.value)
    match = LOCATED.match(f"memharness: {message}")
    assert match, message
    assert int(match["line"]) == len(lines), message  # the bad key is the last line written


@SETTINGS
@given(note=_NOTE, key=st.sampled_from(["model", "api_base", "timeout_scale"]), crlf=st.booleans())
def test_a_cassette_meta_error_names_its_line_whatever_the_strings_hold(
        note: str, key: str, crlf: bool, tmp_path: Path) -> None:
    from harness.errors import HarnessError
    from harness.replay._cassette import read_meta

    members = [f'  "runtime": {json.dumps(note, ensure_ascii=False)}',
               f'  "request": {json.dumps(note + "x", ensure_ascii=False)}', f'  "{key}": true']
    text = ("\r\n" if crlf else "\n").join(["{", ",\n".join(members).replace("\n", "\r\n" if crlf else "\n"), "}"])
    (tmp_path / "cassette-meta.json").write_text(text, encoding="utf-8", newline="")
    (tmp_path / "cassette.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(HarnessError) as caught:
        read_meta(tmp_path)
    message = str(caught.value)
    match = LOCATED.match(f"memharness: {message}")
    assert match, message
    assert int(match["line"]) == 4, message  # "{", runtime, request, then the key
