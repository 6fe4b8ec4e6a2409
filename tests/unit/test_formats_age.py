from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory_core.files.age import freshness_note, freshness_text, memory_age, memory_age_days
from memory_core.files.formats import dump_json, iso_from_ms, iso_ms, js_len, js_slice, parse_iso_ms, to_ms

NOW = datetime(2026, 4, 1, 8, 0, tzinfo=UTC)


def test_iso_ms_has_three_millisecond_digits_and_z() -> None:
    assert iso_ms(datetime(2026, 4, 1, 8, 0, 0, 5_000, tzinfo=UTC)) == "2026-04-01T08:00:00.005Z"
    assert iso_ms(NOW) == "2026-04-01T08:00:00.000Z"


def test_iso_from_ms_truncates_fractional_milliseconds() -> None:
    assert iso_from_ms(to_ms(NOW) + 1.9) == "2026-04-01T08:00:00.001Z"


def test_parse_iso_ms_rejects_garbage() -> None:
    assert parse_iso_ms("not a date") is None
    assert parse_iso_ms(None) is None
    assert parse_iso_ms("2026-04-01T08:00:00.000Z") == to_ms(NOW)


def test_parse_iso_ms_reads_long_fractions_with_their_offset_like_date_parse() -> None:
    """JS Date.parse reads any number of fraction digits and the offset after them (checked with node)."""
    assert parse_iso_ms("2026-04-01T13:00:00." + "0" * 44 + "+05:00") == to_ms(NOW)
    assert parse_iso_ms("2026-04-01T08:00:00.0009999Z") == to_ms(NOW)  # below a millisecond: the same instant
    assert parse_iso_ms("2026-04-01T08:00:00." + "0" * 5000 + "Z") is None  # too long to parse at all


def test_dump_json_omits_none_keeps_order_and_ends_with_newline() -> None:
    assert dump_json({"b": 1, "a": None, "c": "é"}) == '{\n  "b": 1,\n  "c": "é"\n}\n'


def test_js_len_counts_utf16_units() -> None:
    assert js_len("abc") == 3
    assert js_len("😀") == 2
    assert js_slice("a😀b", 2) == "a"  # a split surrogate pair is dropped
    assert js_slice("a😀b", 3) == "a😀"


def test_memory_age_words() -> None:
    ms = to_ms(NOW)
    assert memory_age(ms, now=NOW) == "today"
    assert memory_age(ms - 86_400_000, now=NOW) == "yesterday"
    assert memory_age(ms - 3 * 86_400_000 - 5, now=NOW) == "3 days ago"


def test_future_mtime_clamps_to_zero() -> None:
    assert memory_age_days(to_ms(NOW + timedelta(days=3)), now=NOW) == 0


def test_freshness_only_after_one_day() -> None:
    ms = to_ms(NOW)
    assert freshness_text(ms - 86_400_000, now=NOW) == ""
    text = freshness_text(ms - 2 * 86_400_000, now=NOW)
    assert text.startswith("This memory is 2 days old. ")
    assert "Verify against current code" in text
    assert freshness_note(ms - 2 * 86_400_000, now=NOW) == f"<system-reminder>{text}</system-reminder>\n"
    assert freshness_note(ms, now=NOW) == ""
