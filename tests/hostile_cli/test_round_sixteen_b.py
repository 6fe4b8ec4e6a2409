"""Round 16b (blind, generated): YAML mutated at the node level, hostile plug-ins, concurrent runs.

1. A tag written on a mapping key was dropped: ``!!binary dream: {force: true}``, ``!!python/name:os.system match:
   [...]``, ``!foo user: hi`` were read as the plain keys ``dream``, ``match``, ``user`` and the scenario was valid (a
   node-level mutation fuzzer of the shipped scenarios: 40 of 3,400 files accepted so). Tags on values were already
   read or refused; a key's tag was never looked at. Now a key with a tag (any but ``!!str``) is one located line,
   ``file:line: field: tag !!binary on a key (…)``.

Generated: Hypothesis picks a shipped scenario, one of its mapping keys at any depth and a tag (standard, python,
local ``!foo``, or a ``%TAG`` handle), and writes the key with that tag."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import ScenarioError
from harness.scenario import load_scenario
from tests.harness.conftest import SCENARIOS
from tests.helpers import examples
from tests.hostile_cli._support import LOCATED

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
    try:
        load_scenario(path)
    except ScenarioError as exc:
        message = str(exc)
    else:
        pytest.fail(f"accepted {tag} on key {key.value!r} (line {line} of the file made from {source.name})")
    match = LOCATED.match(f"memharness: {message}")
    assert match, message
    assert message.isprintable(), message
    assert int(match["line"]) == line, message  # the key's own line (its tag, or what it reads as)
