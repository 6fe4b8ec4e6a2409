"""What a run directory's JSON files say that ``report`` and ``compare`` show, checked again as read back.

A run directory is a set of files anyone can edit (or receive). The fields that end up in a link, in the report's
tables or on the terminal are held to the rules they were written under, so an edited run cannot put
``javascript:`` into a report link, an escape sequence onto the terminal, or a line break into an error line
(round 19: ``meta.trace_url`` was written into every scenario's link as read back, unchecked):

- ``meta.trace_url``: null or the ``MEMHARNESS_TRACE_URL`` rule, ``trace_url_problem`` (one rule for both).
- every other text in ``meta`` (keys and values, however deep): no control character, line or paragraph separator,
  or bidirectional control (the report shows every meta field; the terminal shows the system's name).
- a results row's ``scenario`` and ``tags``: identifiers, as a scenario's own (one line, no control character); its
  ``strategy`` (a column label) and ``path``: no control character; its ``description``: scenario text (no
  control character but tab, LF, CR, NEL); its ``trace_id``: empty or 32 lowercase hex digits (what the
  run writes; it is put into the trace link); its ``failures``, ``error`` and ``skipped`` (round 20): no control
  character but tab and LF, no line separator or bidirectional control (``harness.errors.shown_text``: the run
  writes them escaped).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from harness.errors import one_line, text_problem

META_READ: Final = ("system", "systems", "gates_file", "git_commit", "cassettes", "trace_url", "models")
"""``summary.json`` meta fields a reader uses: a wrong type was an unlocated error or an internal one (round 13:
``meta.system = true`` made compare say "system True", naming no line; ``trace_url = [null]`` and ``models`` not a
mapping of mappings were internal errors in the report). ``systems`` is a list of names, ``models`` a mapping of
strategy to a mapping, the rest text."""

_PLACEHOLDER = re.compile(r"\{[A-Za-z0-9_.-]*\}")
"""A ``{name}``, ``{0}`` or ``{}`` the report would leave as it is: only ``{trace_id}`` is filled. Other braces
are the URL's own text (a Grafana Explore link holds JSON: ``left={"queries":[...]}``)."""
_CONTROL: Final = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
"""C0 and C1 controls, DEL, line and paragraph separators, bidirectional embeddings, overrides and isolates."""
_TRACE_ID: Final = re.compile(r"(?:[0-9a-f]{32})?")


def trace_url_problem(template: str) -> str | None:
    """What is wrong with ``MEMHARNESS_TRACE_URL``, the report's link to a scenario's trace: an ``http://`` or
    ``https://`` URL with a host, no spaces or control characters, holding ``{trace_id}`` (each scenario's trace id
    is put there) and no other ``{...}`` (nothing else is filled in); None when it is one. Before (round 18) any
    value was written into every link: ``javascript:…``, a URL without ``{trace_id}`` (every scenario linked to one
    page), ``{traceid}`` left verbatim."""
    from urllib.parse import urlsplit

    expected = "expected an http:// or https:// URL template holding {trace_id}"
    if any(c.isspace() or not c.isprintable() for c in template):
        return f"{expected} (no spaces or control characters)"
    try:
        parts = urlsplit(template.replace("{trace_id}", "0"))
    except ValueError:
        return expected
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return expected
    if "{trace_id}" not in template:
        return f"{expected} (each scenario's trace id is put there)"
    if (other := _PLACEHOLDER.search(template.replace("{trace_id}", ""))) is not None:  # left unfilled: a broken link
        return f"{expected} and no other placeholder ({other.group()} is never filled)"  # (JSON's braces are text)
    return None


def _shown(value: object) -> str:
    return one_line(json.dumps(value, ensure_ascii=False))[:60]


def _control(value: Any) -> str | None:
    """``U+XXXX in "…"`` for the first text inside ``value`` (mapping keys too) holding a control character."""
    if isinstance(value, str):
        return None if (m := _CONTROL.search(value)) is None else f"U+{ord(m.group()):04X} in {_shown(value)}"
    items = [*value.keys(), *value.values()] if isinstance(value, dict) else value if isinstance(value, list) else []
    return next((p for v in items if (p := _control(v)) is not None), None)


def _no_control(field: str, value: Any) -> str | None:
    return None if (bad := _control(value)) is None else f"{field}: expected text without control characters, got {bad}"


def meta_problem(meta: Mapping[str, Any]) -> str | None:
    """``meta.<field>: expected …`` for the first meta field a reader may not take as written, else None."""
    for key in META_READ:  # the meta fields the readers use (compare, merge, history, the report): typed or null
        value = meta.get(key)
        fits = {"systems": isinstance(value, list) and all(isinstance(x, str) for x in value),
                "models": isinstance(value, dict) and all(isinstance(x, dict) for x in value.values())}
        if value is not None and not fits.get(key, isinstance(value, str)):
            wanted = {"systems": "a list of system names", "models": "a mapping of strategy to its model"}
            return f"meta.{key}: expected {wanted.get(key, 'text')} or null, got {_shown(value)}"
    for key, value in meta.items():
        if (problem := _no_control("meta" if _control(key) else f"meta.{key}", key if _control(key) else value)):
            return problem
    url = meta.get("trace_url")
    if url is not None and (problem := trace_url_problem(url)) is not None:
        return f"meta.trace_url: {problem}, got {_shown(url)}"
    return None


def row_problem_shown(row: Mapping[str, Any]) -> str | None:
    """``<field>: expected …`` for the first field of a results row (already typed) that ``report`` or ``compare``
    would show or link to and that breaks its rule, else None."""
    from harness.scenario._limits import bad_char, name_problem

    names = [("scenario", row.get("scenario")), *((f"tags[{i}]", t) for i, t in enumerate(row.get("tags") or ()))]
    for field, name in names:
        if isinstance(name, str) and (problem := name_problem(name)) is not None:
            return f"{field}: expected a name ({problem}), got {_shown(name)}"
    for field in ("strategy", "path"):  # a column label may name a long module:factory: no length limit
        if (problem := _no_control(field, row.get(field) or "")) is not None:
            return problem
    text = row.get("description")
    if isinstance(text, str) and (bad := bad_char(text)) is not None:  # scenario text: line breaks and tabs kept
        return f"description: expected text without control characters, got {bad} in {_shown(text)}"
    texts = [*((f"failures[{i}]", f) for i, f in enumerate(row.get("failures") or ())), ("error", row.get("error")),
             ("skipped", row.get("skipped"))]
    for field, value in texts:  # round 20: the system's text, written with its controls as escapes
        if isinstance(value, str) and (bad := text_problem(value)) is not None:
            return f"{field}: expected text without control characters (tab and line feed aside), got {bad} in " \
                   f"{_shown(value)}"
    trace = row.get("trace_id")
    if isinstance(trace, str) and not _TRACE_ID.fullmatch(trace):
        return f"trace_id: expected 32 lowercase hex digits (or empty), got {_shown(trace)}"
    return None
