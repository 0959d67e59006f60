"""A schedule's times: the next ones after an instant, from its rule and time zone.

The calendars are libraries': RFC 5545 RRULEs are python-dateutil's `rrulestr`, cron
expressions croniter's, time zones the IANA database through `zoneinfo`. Both rules are
evaluated on wall-clock time in the user's zone (naive local datetimes), and each
local time is then placed in the zone, so "every day at 8:00" stays at 8:00 across
daylight-saving changes. A local time the change skips (02:30 on the spring-forward
night) runs at the same wall-clock offset as before the jump, i.e. an hour later (PEP
495's `fold=0`); a time the change repeats (the autumn night) runs once, at its first
occurrence.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from itertools import islice
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from dateutil.rrule import rrulestr

# Local wall-clock times are searched from a little before the instant: a zone's offset
# changes by at most a few hours, and what precedes the instant is filtered out.
_LOOKBACK = timedelta(hours=3)


class BadSchedule(ValueError):
    """The rule or the time zone cannot be read (the message says which and why)."""


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise BadSchedule(f"Unknown time zone {name!r}: give an IANA name.") from None


def check_rule(kind: str, rule: str) -> None:
    """Raise BadSchedule unless `rule` is a readable rule of `kind`."""
    if kind == "cron":
        if not croniter.is_valid(rule) or len(rule.split()) != 5:
            raise BadSchedule(f"Not a five-field cron expression: {rule!r}.")
        return
    try:
        rrulestr(rule, dtstart=datetime(2000, 1, 1), ignoretz=True)
    except (ValueError, TypeError) as error:
        raise BadSchedule(f"Not an RFC 5545 RRULE: {error}.") from None


def next_times(
    kind: str,
    rule: str | None,
    time_zone: str,
    after: datetime,
    *,
    anchor: datetime,
    run_at: datetime | None = None,
    count: int = 1,
) -> list[datetime]:
    """Up to `count` times strictly after `after` (aware, UTC). `anchor` (aware) is where
    an RRULE without DTSTART starts (its seconds dropped), typically the schedule's
    creation; a `once` schedule has `run_at` alone."""
    if kind == "once":
        return [run_at.astimezone(UTC)] if run_at is not None and run_at > after else []
    assert rule is not None
    tz = zone(time_zone)
    local_from = (after - _LOOKBACK).astimezone(tz).replace(tzinfo=None)
    if kind == "cron":
        local_times: Iterator[datetime] = croniter(rule, local_from).all_next(datetime)
    else:
        start = anchor.astimezone(tz).replace(tzinfo=None, second=0, microsecond=0)
        local_times = rrulestr(rule, dtstart=start, ignoretz=True).xafter(local_from)
    placed = (_placed(local, tz) for local in local_times)
    return list(islice(_unique_after(placed, after), count))


def _placed(local: datetime, tz: ZoneInfo) -> datetime:
    """A wall-clock time in the zone, as UTC (fold=0: see the module's docstring)."""
    return local.replace(tzinfo=tz, fold=0).astimezone(UTC)


def _unique_after(times: Iterator[datetime], after: datetime) -> Iterator[datetime]:
    """The times after `after`, each once (two local times of a DST night may be one
    instant)."""
    last = None
    for at in times:
        if at > after and at != last:
            last = at
            yield at
