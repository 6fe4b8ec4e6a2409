"""Byte-level parity helpers (spec Appendix D): timestamps, JSON, string lengths."""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime, timedelta
from typing import Any, Final

_WS: Final = re.compile(r"\s+")
_LONG_FRACTION: Final = re.compile(r"(\.[0-9]{6})[0-9]+")
MAX_ISO_CHARS: Final = 4096
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND: Final = timedelta(microseconds=1)


def iso_ms(moment: datetime) -> str:
    """Format like JS ``toISOString()``: UTC, always three millisecond digits, ``Z`` suffix."""
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def iso_from_ms(epoch_ms: float) -> str:
    """ISO string of an epoch-milliseconds value, truncating fractional milliseconds like JS ``Date``."""
    whole = int(epoch_ms // 1)
    return iso_ms(datetime.fromtimestamp(whole / 1000, tz=UTC).replace(microsecond=(whole % 1000) * 1000))


def parse_iso_ms(text: object) -> float | None:
    """Epoch milliseconds of an ISO timestamp, or None when it does not parse (JS ``Date.parse`` → NaN).

    Like ``Date.parse`` it reads any number of fraction digits (Python's parser takes at most six, so the rest are
    dropped first; only milliseconds matter) and keeps the offset that follows them. Text longer than
    ``MAX_ISO_CHARS`` is refused rather than parsed (a hand-edited state file must not stall the dream gate)."""
    if not isinstance(text, str) or not text or len(text) > MAX_ISO_CHARS:
        return None
    try:
        moment = datetime.fromisoformat(_LONG_FRACTION.sub(r"\1", text).replace("Z", "+00:00"))
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return float((moment - _EPOCH) // timedelta(milliseconds=1))  # whole milliseconds, as a JS Date holds
    except (ValueError, OverflowError):
        return None


def to_ms(moment: datetime) -> float:
    """Epoch milliseconds of an aware datetime, from its whole microseconds (``timestamp() * 1000`` made 1,269 of
    200,000 whole-millisecond moments a hair short: 2004-03-15T07:55:47.472Z gave ...471.9999, shown as .471)."""
    return ((moment - _EPOCH) // _MICROSECOND) / 1000


def ms_to_ns(epoch_ms: float) -> int:
    """Epoch nanoseconds for ``os.utime`` of an epoch-milliseconds value, whole milliseconds kept exact (``ms * 1e6``
    is past 2**53: it set a file stamped at .250 to .249999872, shown as .249)."""
    whole = math.floor(epoch_ms)
    return whole * 1_000_000 + round((epoch_ms - whole) * 1_000_000)


def ns_to_ms(epoch_ns: int) -> float:
    """A stat's ``st_mtime_ns`` in milliseconds, as Node computes ``mtimeMs``: seconds × 1000 + nanoseconds / 1e6
    (one formula for every read; a whole millisecond stays whole)."""
    return (epoch_ns // 1_000_000_000) * 1000 + (epoch_ns % 1_000_000_000) / 1e6


def dump_json(obj: dict[str, Any]) -> str:
    """2-space JSON plus a newline, None-valued keys omitted, insertion order kept (spec §1.6)."""
    return json.dumps({k: v for k, v in obj.items() if v is not None}, indent=2, ensure_ascii=False) + "\n"


def collapse_ws(text: str) -> str:
    """Collapse runs of whitespace to one space and trim."""
    return _WS.sub(" ", text).strip()


def js_len(text: str) -> int:
    """Length in UTF-16 code units, as JS ``String.length`` counts (spec §12)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def js_slice(text: str, units: int) -> str:
    """The first ``units`` UTF-16 code units of ``text``; a split surrogate pair is dropped, not kept half."""
    if units <= 0:
        return ""
    data = text.encode("utf-16-le", "surrogatepass")[: units * 2]
    return data.decode("utf-16-le", "ignore")


def locale_key(text: str) -> tuple[str, str]:
    """Sort key approximating JS ``localeCompare``: case-insensitive first, then code points (Appendix D)."""
    return (text.casefold(), text)
