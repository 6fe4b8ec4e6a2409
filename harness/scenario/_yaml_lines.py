"""Where PyYAML (YAML 1.1) reads a scenario file otherwise than YAML 1.2, editors and JSON Schema do.

**Line breaks.** Line numbers of a scenario file as editors and GitHub count them, whatever PyYAML counts.

PyYAML reads YAML 1.1, where NEL (U+0085), LINE SEPARATOR (U+2028) and PARAGRAPH SEPARATOR (U+2029) are line
breaks: each raw one shifted every later line number of an error or a step by one, ended a comment early (a valid
file became a parse error) and was folded inside a string. In YAML 1.2 and in every editor they are ordinary
characters. The loader hands PyYAML the text with each of them swapped for a character PyYAML takes as text and the
file holds nowhere, raw or escaped (a noncharacter, else one of the private use area), and swaps them back in every
scalar it reads; a file that holds every one of those is read as before.

**Numbers.** YAML 1.1 reads ``0123`` as octal 83, ``1:30`` as 90 (base 60), ``0b11``, ``0x0A`` and ``1_000`` as
numbers, and ``1e0`` as text; YAML 1.2 (and the JSON Schema ``memharness schema`` writes) reads ``0123`` as 123,
``1:30``, ``0b11`` and ``1_000`` as text and ``1e0`` as 1.0. A plain number written the way both agree on (decimal
digits, a decimal point, an exponent) is read; ``1e0`` is the number 1.0, as in YAML 1.2; every other form YAML 1.1
would turn into a number is refused with a located error saying how to write it, never converted silently.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

import yaml

INT_TAG: Final = "tag:yaml.org,2002:int"
FLOAT_TAG: Final = "tag:yaml.org,2002:float"
STR_TAG: Final = "tag:yaml.org,2002:str"
BOOL_TAG: Final = "tag:yaml.org,2002:bool"
AMBIGUOUS_TAG: Final = "tag:memharness,2026:ambiguous-number"
"""A plain scalar YAML 1.1 reads as a number or a boolean and YAML 1.2 does not (or reads as another number)."""
_BOOL_12: Final = frozenset({"true", "True", "TRUE", "false", "False", "FALSE"})
_DECIMAL_INT: Final = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_FLOAT_12: Final = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                              r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")

_BREAKS: Final = "\x85\u2028\u2029"
_STAND_INS: Final = [chr(c) for c in (*range(0xFDD0, 0xFDF0), *range(0xE000, 0xF900))]
"""Characters PyYAML reads as text, to stand in for the three breaks: the 32 noncharacters, then the private use
area; those the file holds (raw, or as an escape of a quoted scalar) are never chosen."""
_ESCAPE: Final = re.compile(r"\\u([0-9a-fA-F]{4})|\\U([0-9a-fA-F]{8})")


def breaks_as_text(text: str) -> tuple[str, dict[int, str] | None]:
    """``text`` with NEL, U+2028 and U+2029 swapped for stand-ins PyYAML reads as text, and the table that swaps a
    scalar back (None when there were none). Round 14: the stand-ins were fixed (U+FDD0-U+FDD2), so a quoted
    ``"\\ufdd1"`` in a file that also held a raw U+2028 was read back as U+2028, a silent change; now each stand-in
    is one the file holds nowhere, neither raw nor as an escape (the escapes are over-counted: never missed)."""
    if not any(ch in text for ch in _BREAKS):
        return text, None
    held = {chr(int(a or b, 16)) for a, b in _ESCAPE.findall(text) if int(a or b, 16) <= 0x10FFFF}
    free = (ch for ch in _STAND_INS if ch not in held and ch not in text)
    stand_ins = [next(free, None) for _ in _BREAKS]
    if None in stand_ins:  # the file holds every candidate: read it as PyYAML does (the breaks as line breaks)
        return text, None
    return text.translate(dict(zip(map(ord, _BREAKS), stand_ins, strict=True))), {
        ord(s): b for s, b in zip(stand_ins, _BREAKS, strict=True) if s is not None}


def error_line(text: str, exc: yaml.YAMLError) -> int:
    """The 1-based line of a reader error's character position (``\\n``-counted), else 1."""
    position = getattr(exc, "position", None)
    return text.count("\n", 0, position) + 1 if isinstance(position, int) else 1


def number_tag(tag: str, value: str) -> str:
    """The tag a plain scalar resolved to by YAML 1.1 (``tag``) gets here: ``AMBIGUOUS_TAG`` for a number or
    boolean form YAML 1.2 reads otherwise (``0123``, ``yes``, ``off``), the float tag for ``1e0``-like text, else
    ``tag``."""
    if tag == BOOL_TAG:
        return tag if value in _BOOL_12 else AMBIGUOUS_TAG
    if tag == INT_TAG:
        return tag if _DECIMAL_INT.fullmatch(value) else AMBIGUOUS_TAG
    if tag == FLOAT_TAG:
        return tag if _FLOAT_12.fullmatch(value) else AMBIGUOUS_TAG
    if tag == STR_TAG and _FLOAT_12.fullmatch(value) and any(ch.isdigit() for ch in value):
        return FLOAT_TAG
    return tag


def ambiguous(value: str) -> str:
    """What to write instead of a plain ``value`` that ``number_tag`` found ambiguous."""
    if value.lower() in ("yes", "no", "on", "off"):
        return (f"{value!r:.40} is a boolean only in YAML 1.1 (yes/no/on/off): write true or false, or quote it for "
                "text")
    return (f"{value!r:.40} is a number only in YAML 1.1 (0123 octal, 1:30 base 60, 0x/0b, 1_000): write the "
            "number in plain decimal digits, or quote it for text")


def tag_name(tag: str) -> str:
    """``!!python/object:os.system`` for ``tag:yaml.org,2002:python/object:os.system`` (not ``!!os.system``)."""
    prefix = "tag:yaml.org,2002:"
    return "!!" + tag[len(prefix):] if tag.startswith(prefix) else tag


def visible(text: str) -> str:
    """``text`` with its invisible format characters (a BOM, a zero-width joiner: Unicode category Cf) escaped, so
    a field named after a key reads as it is written ('memo\\ufeffries', not 'memories')."""
    return "".join(f"\\u{ord(ch):04x}" if unicodedata.category(ch) == "Cf" else ch for ch in text)
