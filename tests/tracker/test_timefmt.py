from datetime import UTC, datetime, timedelta, timezone

import pytest

from tracker.common.timefmt import human_utc, iso_utc, parse_utc


def test_one_instant_reads_the_same_in_both_forms() -> None:
    t = datetime(2026, 11, 25, 17, 26, 15, 794_999, tzinfo=timezone(timedelta(hours=8)))
    assert iso_utc(t) == "2026-11-25T09:26:15.794Z"
    assert human_utc(t) == "2026-11-25 09:26:15 UTC"
    assert parse_utc(iso_utc(t)) == t.replace(microsecond=794_000).astimezone(UTC)


def test_naive_is_utc_and_garbage_is_named() -> None:
    assert iso_utc(datetime(2020, 1, 2, 3, 4, 5)) == "2020-01-02T03:04:05.000Z"
    with pytest.raises(ValueError, match="yesterday"):
        parse_utc("yesterday")


def test_a_time_not_recorded_stays_none() -> None:
    assert iso_utc(None) is None
