from __future__ import annotations

import pytest

from memory_core.files.entries import Entry, merge_entry, parse_entries, render_entries
from memory_core.files.topic import parse_topic, render_topic, replace_body


def test_legacy_body_parses_to_one_entry() -> None:
    body = "# Feedback\n\n- Keep replies terse.\n  - Why: the user reads diffs\n  - How to apply: skip recaps"
    assert parse_entries(body) == [Entry("Keep replies terse.", "the user reads diffs", "skip recaps")]


def test_render_flat_format() -> None:
    text = render_entries([Entry("A fact", "because", "like so"), Entry("B")])
    assert text == "A fact\n\nWhy: because\n\nHow to apply: like so\n\nB"
    assert render_entries([]) == "_No entries yet._"


def test_every_plain_line_is_an_entry() -> None:  # parity: spec §2.2
    assert [e.summary for e in parse_entries("line one\nline two\n\nline three")] == [
        "line one", "line two", "line three"
    ]


def test_bold_why_parses_cleanly() -> None:
    # fix: spec §12 — upstream yields why == "** because" for this line
    assert parse_entries("Rule\n**Why:** because\n**How to apply:** always") == [Entry("Rule", "because", "always")]
    assert parse_entries("Rule\n**Why**: because") == [Entry("Rule", "because")]
    assert parse_entries("Rule\n  - **Why:** nested") == [Entry("Rule", "nested")]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("Why: early\nFact", [Entry("Fact")]),  # a field before any summary is dropped
        ("Fact\nWhy:", [Entry("Fact"), Entry("Why:")]),  # empty value: a new entry
        ("Fact\n - Why: d", [Entry("Fact"), Entry("Why: d")]),  # 1 leading space: a bullet, new entry
        ("Fact\n  -Why: e", [Entry("Fact"), Entry("-Why: e")]),  # no space after the dash
        ("_No entries yet._", []),
        ("# Heading only", []),
        ("Fact\nWhy: a\nWhy: b", [Entry("Fact", "b")]),  # later assignment overwrites
        ("Fact\nhow_to_apply:   spaced    out", [Entry("Fact", None, "spaced out")]),
    ],
)
def test_parse_edge_cases(body: str, expected: list[Entry]) -> None:
    assert parse_entries(body) == expected


def test_round_trip_of_a_legacy_body_drops_heading() -> None:
    body = "# Heading\n- a b\n  - Why: w"
    once = parse_entries(body)
    assert parse_entries(render_entries(once)) == once
    assert "# Heading" not in render_entries(once)


def test_merge_entry_existing_fields_win() -> None:
    assert merge_entry(Entry("a", "w1"), Entry("A", "w2", "h")) == Entry("A", "w1", "h")
    assert merge_entry(Entry("a"), Entry("")) == Entry("a")


def test_search_text() -> None:
    assert Entry("Sum", None, "How").search_text() == "sum how"


def test_parse_topic_spec_scan_case() -> None:
    text = "---\ntitle: Project Memory\ntype: project\n---\n# Project Memory\n\n- Release freeze starts Friday.\n"
    doc = parse_topic(text, relative_path="project.md")
    assert doc is not None
    assert (doc.type, doc.title, doc.description, doc.mtime_ms) == ("project", "Project Memory", "", 0.0)
    assert doc.body == "# Project Memory\n\n- Release freeze starts Friday."
    assert doc.filename == "project.md"


@pytest.mark.parametrize(
    "text",
    [
        "---\r\nname: x\r\ntype: user\r\n---\r\nbody",  # CRLF: ignored (parity)
        "---\n---\nbody",  # empty frontmatter
        "no frontmatter",
        "---\nname: x\ntype: User\n---\nbody",  # type is case-sensitive
        "---\nname: x\n---\nbody",  # missing type
    ],
)
def test_non_docs_parse_to_none(text: str) -> None:
    assert parse_topic(text, relative_path="x.md") is None


def test_invalid_yaml_falls_back_to_line_fields() -> None:
    doc = parse_topic("---\nname: X\ndescription: a: b\ntype: user\n---\nB", relative_path="x.md")
    assert doc is not None
    assert (doc.title, doc.description) == ("X", "a: b")


def test_title_falls_back_to_type() -> None:
    doc = parse_topic("---\ntype: reference\n---\n", relative_path="r.md")
    assert doc is not None
    assert doc.title == "reference"
    assert doc.body == ""


def test_render_topic_round_trips_awkward_values() -> None:
    for name, desc in [("a: b", "yes"), ("#hash", "'quoted' \"double\""), ("- dash", "null"), ("12", "ünïcode: ✓")]:
        doc = parse_topic(render_topic(name=name, description=desc, kind="feedback", body="x"), relative_path="f.md")
        assert doc is not None
        assert (doc.title, doc.description, doc.type, doc.body) == (name, desc, "feedback", "x")


def test_replace_body_keeps_frontmatter_bytes() -> None:
    text = "---\nname:  X\ntype: user\n---\nold"
    assert replace_body(text, "new") == "---\nname:  X\ntype: user\n---\n\nnew\n"
    assert replace_body("nope", "new") is None
