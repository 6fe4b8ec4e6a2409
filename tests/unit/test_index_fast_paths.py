"""The index's fast paths (printable-ASCII fields, plain paths, the line cache) give exactly what the character-by-
character rules of ``memory_core/files/index.py`` give, for any text."""

from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_core.files import index
from memory_core.files.topic import TopicDoc

CHARS = st.one_of(st.characters(), st.sampled_from(list("[]`<\\/.:%#?() \t\n\x7f\u2028\u202e\u2066\udce9é~-_")))
TEXT = st.text(CHARS, max_size=450)


def _line_safe_by_char(text: str) -> str:
    out = []
    for ch in text[:400]:
        cat = unicodedata.category(ch)
        if cat in ("Cc", "Zl", "Zp"):
            out.append(" ")
        elif cat == "Cs":
            out.append("\ufffd")
        elif not (0x202A <= ord(ch) < 0x202F or 0x2066 <= ord(ch) < 0x206A):
            out.append(ch)
    return "".join(out).translate({ord("["): "(", ord("]"): ")", ord("`"): "'", ord("<"): "\u2039"})


def _encoded_by_char(path: str) -> str:
    return "".join(ch if ch in "-._~/!$&'*+,;=:@" or (ch.isalnum() and unicodedata.category(ch)[0] in "LN")
                   else index._encode_char(ch) for ch in path)


@given(TEXT, TEXT, TEXT, st.sampled_from(["user", "feedback", "project", "reference"]))
@settings(max_examples=3000, deadline=None)
def test_fast_paths_agree_with_the_character_rules(title: str, description: str, path: str, kind: str) -> None:
    assert index._line_safe(title) == _line_safe_by_char(title)
    segments = [s for s in _encoded_by_char(path).split("/") if s not in ("", ".", "..")]
    target = "/".join(segments) or "MEMORY.md"
    assert index.index_target(path) == (f"./{target}" if segments and ":" in segments[0] else target)
    doc = TopicDoc(kind, path, title, description, "")  # type: ignore[arg-type]
    assert index.index_line(doc) == index._index_line.__wrapped__(title, description or kind, path, 150)
    assert index.index_line(doc) == index.index_line(doc)  # the cached line
