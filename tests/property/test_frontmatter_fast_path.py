"""The frontmatter fast path gives exactly what the YAML path gives, or steps aside."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from memory_core.files import topic
from memory_core.files.topic import MEMORY_TYPES, parse_topic, render_frontmatter, render_topic

KEYS = st.sampled_from(["name", "title", "description", "type", "created", "Name", "on", "tags"])
TRICKY = st.sampled_from(
    [":", " :", ": ", "#", " #", " ", "  ", "'", "''", '"', "\t", "-", ".", "0", "1.5", "2024-13-45", "0b", "~",
     "null", "yes", "Off", "user", "project", "é", "\xa0", "\x85", "\u2028", "\ufeff", "\x7f", "\x00", "[", "{",
     "*", "&", "!", "|", ">", "%", "@", "`", "?", ",", "=", "<<", "_", "(", "/", "a", "Z", "\U0001f600", "\\n"]
)
VALUES = st.lists(TRICKY | st.text(max_size=3), max_size=6).map("".join)


def _yaml_only(monkeypatch: pytest.MonkeyPatch, text: str) -> object:
    with monkeypatch.context() as m:
        m.setattr(topic, "_simple_fields", lambda _fm: None)
        try:
            return parse_topic(text, relative_path="a.md")
        except ValueError as exc:  # a malformed date or number raises from the YAML constructor
            return ("raises", type(exc))


@given(st.lists(st.tuples(KEYS, VALUES, st.sampled_from([": ", ":  ", ":", ": '"])), min_size=1, max_size=5))
@example([("name", "a: b", ": "), ("type", "user", ": ")])
@example([("description", "2024-13-45", ": "), ("type", "user", ": ")])
@example([("name", "x", ": "), ("name", "y", ": "), ("type", "user", ": ")])
def test_fast_path_agrees_with_yaml(lines: list[tuple[str, str, str]]) -> None:
    fm = "\n".join(f"{k}{sep}{v}" + ("'" if sep.endswith("'") else "") for k, v, sep in lines)
    simple = topic._simple_fields(fm)
    if simple is not None:
        assert simple == topic._yaml_fields(fm)


@given(st.text(max_size=40), st.text(max_size=60), st.sampled_from(MEMORY_TYPES), st.text(max_size=40))
def test_parse_topic_same_with_and_without_fast_path(name: str, description: str, kind: str, body: str) -> None:
    text = render_topic(name=name, description=description, kind=kind, body=body)  # type: ignore[arg-type]
    mp = pytest.MonkeyPatch()
    try:
        assert parse_topic(text, relative_path="a.md") == _yaml_only(mp, text)
    finally:
        mp.undo()


@given(st.lists(st.tuples(KEYS, VALUES), min_size=1, max_size=5), st.text(max_size=20))
def test_parse_topic_of_hand_written_frontmatter(lines: list[tuple[str, str]], body: str) -> None:
    text = "---\n" + "\n".join(f"{k}: {v}" for k, v in lines) + "\n---\n" + body
    mp = pytest.MonkeyPatch()
    try:
        expected = _yaml_only(mp, text)
    finally:
        mp.undo()
    if isinstance(expected, tuple):
        assert topic._simple_fields(text.split("\n---\n")[0][4:]) is None
    else:
        assert parse_topic(text, relative_path="a.md") == expected


@pytest.mark.parametrize(
    ("name", "description"),
    [("Deploy rules", "How we ship: tags, freezes and rollbacks"), ("User prefs", "Terse replies; no recaps"),
     ("Grafana", "https://grafana.internal/d/api-latency #latency"), ("Café menu", "Prefers 'oat' milk — always")],
)
def test_what_the_core_writes_takes_the_fast_path(name: str, description: str) -> None:
    fm = render_frontmatter(name=name, description=description, kind="user")
    assert topic._simple_fields(fm) == {"name": name, "description": description, "type": "user"}


@given(st.lists(st.sampled_from(["---", "\n", "-", "a", ": ", "\r", "--", "\n---\n", "---\n"]), max_size=12).map("".join))
@example("---\n\n---")
@example("---\n---\n")
@example("---\na: b\n---")
@example("---\na: b\n---\n\nbody\n---\nmore")
def test_split_frontmatter_matches_the_spec_regex(text: str) -> None:
    m = topic._FRONTMATTER.match(text)
    assert topic.split_frontmatter(text) == (None if m is None else (m.group(1), m.group(2)))


@pytest.mark.parametrize("length", [1024, 1025])
def test_a_key_too_long_for_yaml_leaves_the_fast_path(monkeypatch: pytest.MonkeyPatch, length: int) -> None:
    # PyYAML refuses a simple key over 1024 characters: the YAML path then falls back to the line lookup, which
    # keeps the quotes of 'user' (an unknown type: the file is skipped); the fast path must not read it as user
    text = "---\n" + "k" * length + ": x\ntype: 'user'\nname: n\n---\nbody"
    fast = parse_topic(text, relative_path="a.md")
    assert fast == _yaml_only(monkeypatch, text)
    assert (fast is None) == (length > 1024)
