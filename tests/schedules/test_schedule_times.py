"""A schedule's next times, with a fixed "now" (no waiting): wall-clock times in the
user's zone across daylight-saving changes, cron and RRULE alike."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from app.schedules.times import BadSchedule, check_rule, next_times

BERLIN = "Europe/Berlin"
# Berlin springs forward on 2026-03-29 (02:00 CET -> 03:00 CEST) and falls back on
# 2026-10-25 (03:00 CEST -> 02:00 CET).
SPRING_EVE = datetime(2026, 3, 27, 12, 0, tzinfo=UTC)
AUTUMN_EVE = datetime(2026, 10, 23, 12, 0, tzinfo=UTC)


def _utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


@pytest.mark.parametrize(
    ("kind", "rule"),
    [("cron", "0 8 * * *"), ("rrule", "FREQ=DAILY;BYHOUR=8;BYMINUTE=0")],
)
def test_a_daily_8_am_stays_8_am_in_berlin_across_both_changes(kind: str, rule: str) -> None:
    spring = next_times(kind, rule, BERLIN, SPRING_EVE, anchor=SPRING_EVE, count=4)
    # 8:00 CET is 07:00 UTC; from the 29th 8:00 CEST is 06:00 UTC.
    assert spring == [_utc(2026, 3, 28, 7), _utc(2026, 3, 29, 6), _utc(2026, 3, 30, 6),
                      _utc(2026, 3, 31, 6)]  # fmt: skip
    autumn = next_times(kind, rule, BERLIN, AUTUMN_EVE, anchor=AUTUMN_EVE, count=3)
    assert autumn == [_utc(2026, 10, 24, 6), _utc(2026, 10, 25, 7), _utc(2026, 10, 26, 7)]


def test_a_time_the_spring_change_skips_runs_an_hour_later_and_a_repeated_one_once() -> None:
    skipped = next_times("cron", "30 2 * * *", BERLIN, SPRING_EVE, anchor=SPRING_EVE, count=3)
    # 02:30 does not exist on the 29th: it runs at 03:30 CEST (01:30 UTC), as 02:30 CET would.
    assert skipped == [_utc(2026, 3, 28, 1, 30), _utc(2026, 3, 29, 1, 30), _utc(2026, 3, 30, 0, 30)]
    repeated = next_times("cron", "30 2 * * *", BERLIN, AUTUMN_EVE, anchor=AUTUMN_EVE, count=3)
    # 02:30 happens twice on the 25th: once, the first time (CEST, 00:30 UTC).
    assert repeated == [_utc(2026, 10, 24, 0, 30), _utc(2026, 10, 25, 0, 30),
                        _utc(2026, 10, 26, 1, 30)]  # fmt: skip


def test_weekday_mornings_by_rrule_and_cron_agree() -> None:
    now = _utc(2026, 11, 27, 9)  # a Friday, 10:00 in Berlin
    by_cron = next_times("cron", "0 8 * * 1-5", BERLIN, now, anchor=now, count=3)
    by_rrule = next_times(
        "rrule", "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=8;BYMINUTE=0", BERLIN, now,
        anchor=now, count=3,
    )  # fmt: skip
    assert (
        by_cron == by_rrule == [_utc(2026, 11, 30, 7), _utc(2026, 12, 1, 7), _utc(2026, 12, 2, 7)]
    )


def test_once_is_its_time_until_it_has_passed() -> None:
    at = _utc(2026, 12, 1, 9)
    assert next_times("once", None, "UTC", _utc(2026, 11, 1), anchor=at, run_at=at) == [at]
    assert next_times("once", None, "UTC", at, anchor=at, run_at=at) == []


def test_a_count_limited_rrule_ends() -> None:
    anchor = _utc(2026, 1, 1, 8)
    rule = "FREQ=DAILY;COUNT=2"
    assert len(next_times("rrule", rule, "UTC", anchor, anchor=anchor, count=5)) == 1


@pytest.mark.parametrize(
    ("kind", "rule"),
    [("cron", "61 * * * *"), ("cron", "* * * * * *"), ("rrule", "FREQ=SOMETIMES"), ("rrule", "")],
)
def test_unreadable_rules_are_refused(kind: str, rule: str) -> None:
    with pytest.raises(BadSchedule):
        check_rule(kind, rule)
