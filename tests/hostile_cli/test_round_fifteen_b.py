"""Round 15b (generated): scenario file bytes, stores that vanish, the command line.

1. A scenario file saved as UTF-16 or UTF-32 was ``not UTF-8: byte 0xff`` on line 1 with a byte-order mark, and
   without one (ASCII text: every byte pair decodes as UTF-8) YAML's ``unacceptable character #x0000``: neither
   said the file was UTF-16. Now ``file: cannot be read (not UTF-8: the file is UTF-16-LE, …); save it as UTF-8``.
   A bad byte is named with its line, its column and what it is (a stray continuation byte, an overlong form, an
   encoded surrogate, past U+10FFFF, a character cut short); a NUL byte in UTF-8 text is named as such.

Generated: Hypothesis writes a valid scenario of random text, saves it in a random encoding or plants a random kind
of bad byte sequence at a random place, and checks the one line ``validate`` prints."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import examples
from tests.hostile_cli._support import assert_one_line_error, cli

SETTINGS = settings(max_examples=examples(40), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# text a comment or a quoted value can hold: printable, no quote or backslash, any plane
_TEXT = st.text(st.characters(codec="utf-8", categories=("L", "N", "Zs", "S"), exclude_characters='"\\'),
                max_size=30)


@st.composite
def scenario_lines(draw: st.DrawFn) -> list[str]:
    """A valid scenario (it starts with an ASCII key, as every scenario does), with random text in its values and
    comments."""
    lines = [f'description: "{draw(_TEXT)}x"', "tags: [a]", "steps:"]
    for _ in range(draw(st.integers(1, 6))):
        lines.append(f"  - advance: {draw(st.integers(1, 50))}m   # {draw(_TEXT)}")
    return lines


ENCODINGS = {"utf-16": "UTF-16-LE", "utf-16-le": "UTF-16-LE", "utf-16-be": "UTF-16-BE", "utf-32": "UTF-32-LE",
             "utf-32-le": "UTF-32-LE", "utf-32-be": "UTF-32-BE"}


@SETTINGS
@given(lines=scenario_lines(), codec=st.sampled_from(sorted(ENCODINGS)), bom=st.booleans(),
       end=st.sampled_from(["\n", "\r\n"]))
def test_utf16_and_utf32_files_are_named(lines: list[str], codec: str, bom: bool, end: str,
                                         tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "s.yaml"
    text = end.join(lines) + end
    source.write_text(text, encoding="utf-8", newline="")
    assert cli(["validate", str(source)], capsys).code == 0  # the scenario is valid as UTF-8
    explicit = codec in ("utf-16", "utf-32")  # Python's own writes a byte-order mark
    data = ("\ufeff" + text if bom and not explicit else text).encode(codec)
    source.write_bytes(data)
    says = "its byte-order mark says so" if bom or explicit else "its NUL bytes say so"
    o = cli(["validate", str(source)], capsys)
    assert_one_line_error(o, mentions=(f"{source}:1: file: cannot be read (not UTF-8: the file is {ENCODINGS[codec]}, "
                                       f"{says}); save it as UTF-8",), budget=10.0)


# each kind of sequence that is not UTF-8, and the words that name it
BAD = {
    "continuation": (st.integers(0x80, 0xBF).map(lambda b: bytes([b])), "a continuation byte with no lead byte"),
    "overlong": (st.one_of(st.tuples(st.sampled_from([0xC0, 0xC1]), st.integers(0x80, 0xBF)),
                           st.tuples(st.just(0xE0), st.integers(0x80, 0x9F), st.integers(0x80, 0xBF)),
                           st.tuples(st.just(0xF0), st.integers(0x80, 0x8F), st.integers(0x80, 0xBF),
                                     st.integers(0x80, 0xBF))).map(bytes), "an overlong form"),
    "surrogate": (st.integers(0xD800, 0xDFFF).map(lambda c: chr(c).encode("utf-8", "surrogatepass")),
                  "an encoded UTF-16 surrogate"),
    "past-max": (st.one_of(st.integers(0x110000, 0x13FFFF).map(
        lambda c: bytes([0xF0 | c >> 18, 0x80 | (c >> 12) & 0x3F, 0x80 | (c >> 6) & 0x3F, 0x80 | c & 0x3F])),
        st.integers(0xF5, 0xF7).map(lambda b: bytes([b, 0x80, 0x80, 0x80]))), "past U+10FFFF"),
    "never": (st.sampled_from([b"\xf8", b"\xfc", b"\xfe", b"\xff"]), "a byte no UTF-8 text holds"),
    "latin-1": (st.text(st.characters(min_codepoint=0xC0, max_codepoint=0xFF), min_size=1, max_size=4).map(
        lambda t: t.encode("latin-1") + b"x"), "(Latin-1 or Windows-1252 text?)"),
    "nul": (st.just(b"\x00"), "a NUL byte"),
}


@SETTINGS
@given(lines=scenario_lines(), kind=st.sampled_from(sorted(BAD)), data=st.data())
def test_a_bad_byte_is_named_with_its_line_column_and_kind(lines: list[str], kind: str, data: st.DataObject,
                                                           tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad, words = BAD[kind]
    row = data.draw(st.integers(3, len(lines) - 1), label="line")  # a line with a comment
    line = lines[row]
    at = data.draw(st.integers(line.index("#") + 1, len(line)), label="column")
    planted = line[:at].encode("utf-8") + data.draw(bad, label="bytes") + line[at:].encode("utf-8")
    source = tmp_path / "s.yaml"
    source.write_bytes(b"".join((planted if n == row else text.encode("utf-8")) + b"\n" for n, text in enumerate(lines)))
    o = cli(["validate", str(source)], capsys)
    column = f"column {at + 1}: " if kind != "nul" else f"column {at + 1}: no text"
    assert_one_line_error(o, mentions=(f"{source}:{row + 1}: file: cannot be read (", words, column), budget=10.0)
