"""Line numbers of a scenario file as editors and GitHub count them, whatever PyYAML counts.

PyYAML reads YAML 1.1, where NEL (U+0085), LINE SEPARATOR (U+2028) and PARAGRAPH SEPARATOR (U+2029) are line
breaks: each raw one shifted every later line number of an error or a step by one, ended a comment early (a valid
file became a parse error) and was folded inside a string. In YAML 1.2 and in every editor they are ordinary
characters. The loader hands PyYAML the text with each of them swapped for a noncharacter PyYAML takes as text
(U+FDD0-U+FDD2) and swaps them back in every scalar it reads; a file that already holds one of those noncharacters
is read as before.
"""

from __future__ import annotations

from typing import Final

import yaml

_AS_TEXT: Final = str.maketrans({"\x85": "\ufdd0", "\u2028": "\ufdd1", "\u2029": "\ufdd2"})
_BACK: Final = str.maketrans({"\ufdd0": "\x85", "\ufdd1": "\u2028", "\ufdd2": "\u2029"})


def breaks_as_text(text: str) -> tuple[str, bool]:
    """``text`` with NEL, U+2028 and U+2029 swapped for stand-ins PyYAML reads as text, and whether any were."""
    if not any(ch in text for ch in "\x85\u2028\u2029") or any(ch in text for ch in "\ufdd0\ufdd1\ufdd2"):
        return text, False
    return text.translate(_AS_TEXT), True


def restore(value: str) -> str:
    """A scalar read from swapped text, with its stand-ins back to the characters the file holds."""
    return value.translate(_BACK)


def error_line(text: str, exc: yaml.YAMLError) -> int:
    """The 1-based line of a reader error's character position (``\\n``-counted), else 1."""
    position = getattr(exc, "position", None)
    return text.count("\n", 0, position) + 1 if isinstance(position, int) else 1
