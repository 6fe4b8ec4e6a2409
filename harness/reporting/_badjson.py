"""Where a run file's invalid JSON goes wrong: the field being read there and the column (round 15: ``probes.jsonl:12:
invalid JSON (Expecting ',' delimiter)`` named a line of 2,000 characters and no field; a line cut short by a
truncated copy said only ``Unterminated string starting at``)."""

from __future__ import annotations

import json

from harness.errors import one_line


def field_at(text: str, end: int) -> str:
    """The field (``metrics.recall``, ``resourceSpans[0].scopeSpans[0].spans[3].name``) whose value or key the JSON
    ``text`` is in at offset ``end``: the containers opened before it and the key or index in each; empty at the
    top level. A scan of the text alone (it may not parse)."""
    frames: list[list[object]] = []  # [kind, key or index, expecting a key]
    i = 0
    while i < end:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < len(text) and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if frames and frames[-1][0] == "{" and frames[-1][2]:
                try:
                    frames[-1][1] = json.loads(text[i:j + 1])
                except ValueError:
                    frames[-1][1] = text[i + 1:j]
            i = j + 1
            continue
        if c in "{[":
            frames.append([c, None if c == "{" else 0, c == "{"])
        elif c in "}]" and frames:
            frames.pop()
        elif c == ":" and frames and frames[-1][0] == "{":
            frames[-1][2] = False
        elif c == "," and frames:
            if frames[-1][0] == "{":
                frames[-1][1], frames[-1][2] = None, True
            else:
                frames[-1][1] = int(str(frames[-1][1])) + 1
        i += 1
    out = ""
    for kind, key, _ in frames:
        if kind == "[":
            out += f"[{key}]"
        elif key is not None:
            out += f".{key}" if out else str(key)
        else:
            break
    return one_line(out)[:120]


def json_problem(text: str, exc: json.JSONDecodeError, *, whole: str) -> str:
    """``<field>: invalid JSON at column <c> (<what>)`` for ``exc`` raised reading ``text`` (one line of a JSON-lines
    file, or a whole file); ``whole`` names the field when the error is outside every field (``row``, ``file``).
    A line or file that ends inside a value says so: a copy cut short is the usual cause."""
    field = field_at(text, exc.pos) or whole
    cut = " — the text ends there: cut short?" if not text[exc.pos:].strip() or exc.msg.startswith(
        "Unterminated") else ""
    return f"{field}: invalid JSON at column {exc.colno} ({exc.msg}{cut})"
