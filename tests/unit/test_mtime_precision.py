"""A file's mtime between the store's milliseconds and the file system's nanoseconds (``ms_to_ns`` / ``ns_to_ms``):
a stamp at a whole millisecond reads back as that millisecond. ``ms * 1e6`` and ``ns / 1e6`` are past 2**53 for
today's dates, so they lost ~128 ns and a file stamped at .250 showed .249 in the recall manifest (spec §7.4)."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from memory_core.files.formats import iso_from_ms, ms_to_ns, ns_to_ms

# 1970 .. 2200, whole milliseconds, and with a sub-millisecond part
WHOLE_MS = st.integers(min_value=0, max_value=7_258_118_400_000)


@given(WHOLE_MS, st.integers(min_value=0, max_value=999_999))
def test_whole_milliseconds_survive_the_trip_through_nanoseconds(ms: int, sub_ns: int) -> None:
    assert ms_to_ns(float(ms)) == ms * 1_000_000
    assert ns_to_ms(ms * 1_000_000) == float(ms)
    assert iso_from_ms(ns_to_ms(ms * 1_000_000 + sub_ns)) == iso_from_ms(float(ms))  # truncated, never rounded up


@given(WHOLE_MS, st.integers(min_value=0, max_value=999))
def test_a_stamp_read_back_from_the_file_system_shows_the_same_millisecond(ms: int, frac: int) -> None:
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"mtime-{os.getpid()}"
    path.write_bytes(b"")
    try:
        stamp = ms + frac / 1000
        os.utime(path, ns=(ms_to_ns(stamp),) * 2)
        back = ns_to_ms(path.stat().st_mtime_ns)
        assert iso_from_ms(back) == iso_from_ms(float(ms))
        assert abs(back - stamp) < 1e-3
    finally:
        path.unlink()


def test_the_case_that_was_wrong() -> None:
    ms = datetime(2026, 3, 2, 9, 0, 0, 250_000, tzinfo=UTC).timestamp() * 1000
    assert round(ms * 1e6) != 1_772_442_000_250_000_000  # the old product: 128 ns early
    assert ms_to_ns(ms) == 1_772_442_000_250_000_000
    assert iso_from_ms(ns_to_ms(1_772_442_000_250_000_000)) == "2026-03-02T09:00:00.250Z"
    assert iso_from_ms(1_772_442_000_250_000_000 / 1e6) == "2026-03-02T09:00:00.249Z"  # the old read
