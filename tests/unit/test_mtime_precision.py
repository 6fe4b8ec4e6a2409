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


@given(WHOLE_MS, st.integers(min_value=0, max_value=998_000))  # a fraction within a float's step (~1e-3 ms by
# 2200) of the next millisecond rounds up, in Node's mtimeMs as here: no whole millisecond to keep there
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


@given(st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(2200, 1, 1),  # noqa: DTZ001 - naive bounds
                    timezones=st.just(UTC)).map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)))
def test_a_moment_stamped_on_a_file_reads_back_as_the_same_millisecond(moment: datetime) -> None:
    """Through the callers' path: ``to_ms(datetime)`` (which was ``timestamp() * 1000``, a hair short for 1,269 of
    200,000 whole-millisecond moments: 2004-03-15T07:55:47.472Z was stamped as .471), then stamp and read back."""
    from memory_core.files.formats import iso_ms, to_ms

    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"mtime-{os.getpid()}"
    path.write_bytes(b"")
    try:
        os.utime(path, ns=(ms_to_ns(to_ms(moment)),) * 2)
        assert iso_from_ms(ns_to_ms(path.stat().st_mtime_ns)) == iso_ms(moment)
    finally:
        path.unlink()


def test_the_moment_the_review_found() -> None:
    from memory_core.files.formats import to_ms

    moment = datetime(2004, 3, 15, 7, 55, 47, 472_000, tzinfo=UTC)
    assert moment.timestamp() * 1000 < 1_079_337_347_472  # the old product
    assert to_ms(moment) == 1_079_337_347_472.0
