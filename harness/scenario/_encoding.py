"""What is wrong with bytes that are not UTF-8: the encoding a file was saved in, or the first bad byte's line,
column and kind (round 15b: a UTF-16 file was ``not UTF-8: byte 0xff`` on line 1, and one of ASCII text without a
byte-order mark passed the decoder, its NUL bytes then a YAML error that never said the file was UTF-16).

``encoding_problem`` names a UTF-16 or UTF-32 file by its byte-order mark, or without one by the pattern of NUL bytes
its first characters make (YAML 1.2 §5.2's detection); ``byte_problem`` says why the byte at which UTF-8 decoding
stopped is not UTF-8 (a stray continuation byte, an overlong form, an encoded surrogate, a code point past
U+10FFFF, a character cut short); ``nul_problem`` finds a NUL byte in text that decoded (never text in any file the
harness reads).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Final

from harness.errors import HarnessError, ScenarioError, one_line

_BOMS: Final = ((b"\x00\x00\xfe\xff", "UTF-32-BE"), (b"\xff\xfe\x00\x00", "UTF-32-LE"), (b"\xfe\xff", "UTF-16-BE"),
                (b"\xff\xfe", "UTF-16-LE"))
_CODECS: Final = {"UTF-32-BE": "utf-32-be", "UTF-32-LE": "utf-32-le", "UTF-16-BE": "utf-16-be", "UTF-16-LE": "utf-16-le"}
SAVE: Final = "save it as UTF-8"


def _sniff(data: bytes) -> tuple[str, bool] | None:
    """The UTF-16/32 encoding ``data`` starts in, and whether a byte-order mark says so; None for anything else."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            return name, True
    head = data[:4]
    if len(head) == 4 and head[:3] == b"\x00\x00\x00" and head[3]:
        return "UTF-32-BE", False
    if len(head) == 4 and head[0] and head[1:] == b"\x00\x00\x00":
        return "UTF-32-LE", False
    if len(head) >= 2 and head[0] == 0 and head[1]:
        return "UTF-16-BE", False
    if len(head) >= 2 and head[0] and head[1] == 0:
        return "UTF-16-LE", False
    return None


def encoding_problem(data: bytes) -> str | None:
    """``cannot be read (not UTF-8: the file is UTF-16-LE, …)`` for a UTF-16 or UTF-32 file, else None."""
    found = _sniff(data)
    if found is None:
        return None
    name, bom = found
    try:
        data.decode(_CODECS[name])
        sure = True
    except UnicodeDecodeError:
        sure = False
    how = "its byte-order mark says so" if bom else "its NUL bytes say so" if sure else "by its first bytes"
    return f"cannot be read (not UTF-8: the file is {name if sure or bom else 'like ' + name}, {how}); {SAVE}"


def _kind(data: bytes, start: int, reason: str) -> str:
    first = data[start]
    after = data[start + 1] if start + 1 < len(data) else 0
    cont = 0x80 <= after <= 0xBF  # the next byte continues a character
    if 0x80 <= first <= 0xBF:
        return "a continuation byte with no lead byte before it (Latin-1 or Windows-1252 text?)"
    if cont and (first in (0xC0, 0xC1) or (first == 0xE0 and after < 0xA0) or (first == 0xF0 and after < 0x90)):
        return "an overlong form (a character written in more bytes than UTF-8 allows)"
    if first == 0xED and cont and after >= 0xA0:
        return "an encoded UTF-16 surrogate (U+D800 to U+DFFF, as CESU-8 writes them; never UTF-8)"
    if cont and (0xF5 <= first <= 0xF7 or (first == 0xF4 and after >= 0x90)):
        return "past U+10FFFF, the last code point"
    if first >= 0xF5 or first in (0xC0, 0xC1):
        return "a byte no UTF-8 text holds (Latin-1 or Windows-1252 text?)"
    if reason == "unexpected end of data":
        return "a character cut short by the end of the file"
    return "a character cut short (Latin-1 or Windows-1252 text?)"


def byte_problem(data: bytes, start: int, reason: str) -> tuple[int, str]:
    """The line of the byte at ``start`` and ``cannot be read (not UTF-8: byte 0x..), column N: what it is``."""
    line = data.count(b"\n", 0, start) + 1
    column = len(data[data.rfind(b"\n", 0, start) + 1:start].decode("utf-8")) + 1
    return line, f"cannot be read (not UTF-8: byte 0x{data[start]:02x}), column {column}: {_kind(data, start, reason)}; {SAVE}"


def nul_problem(text: str) -> tuple[int, str] | None:
    """The line of the first NUL character of ``text`` and what it is, or None."""
    at = text.find("\x00")
    if at < 0:
        return None
    line = text.count("\n", 0, at) + 1
    column = at - (text.rfind("\n", 0, at) + 1) + 1
    return line, f"cannot be read (a NUL byte, column {column}: no text holds one; a binary file, or UTF-16 cut short?)"


def read_regular(path: Path, *, limit: int, error: type[HarnessError] = ScenarioError) -> bytes:
    """At most ``limit`` bytes of a regular file, or ``error`` naming the file: a FIFO, a device, a directory or
    a larger file is refused without blocking (``O_NONBLOCK``, ``fstat`` before reading, read ``limit + 1``)."""
    where = one_line(str(path))
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except (OSError, ValueError) as exc:
        raise error(f"{where}:1: file: cannot be opened ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise error(f"{where}:1: file: not a regular file ({_file_kind(mode)})")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise error(f"{where}:1: file: cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    if size > limit:
        raise error(f"{where}:1: file: larger than the limit of {limit} bytes")
    return b"".join(chunks)


def decode_utf8(data: bytes, path: Path, error: type[HarnessError] = ScenarioError) -> str:
    """``data`` as UTF-8, or ``error`` naming the file and the encoding it is in (UTF-16, UTF-32), or the line,
    column and kind of the first bad byte (``_encoding.py``)."""
    if problem := encoding_problem(data):
        raise error(f"{one_line(str(path))}:1: file: {problem}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, what = byte_problem(data, exc.start, exc.reason)
        raise error(f"{one_line(str(path))}:{line}: file: {what}") from None


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a plain file"
