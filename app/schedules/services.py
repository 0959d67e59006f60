"""Schedules: the rules (limits, times, pause and resume); never commits.

A schedule's `next_run_at` is its next time after now (None once paused, or once a
`once` schedule ran). Creating and editing check the rule, the time zone, the minimum
gap between two runs and the number of schedules per user; every change that moves
`next_run_at` wakes the scheduler after commit (app/tasks/reminders.wakers).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any
from uuid import UUID

import msgspec
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import clock
from app.db.models import Schedule, Thread, User
from app.db.outbox import on_commit
from app.lib.problems import ProblemException
from app.schedules import times as schedule_times
from app.schedules.schemas import ScheduleCreate, ScheduleRead, ScheduleUpdate
from app.settings import Settings
from app.tasks import reminders

LIST_LIMIT = 100  # the per-user limit is lower: a list is one page
GAP_SAMPLES = 6  # times checked for the minimum gap


def schedule_read(schedule: Schedule) -> ScheduleRead:
    return msgspec.convert(schedule, ScheduleRead, from_attributes=True)


async def list_schedules(session: AsyncSession, user: User) -> list[Schedule]:
    query = (
        select(Schedule)
        .where(Schedule.owner_id == user.id)
        .order_by(Schedule.created_at.desc(), Schedule.id.desc())
        .limit(LIST_LIMIT)
    )
    return list(await session.scalars(query))


async def get_owned(session: AsyncSession, user: User, schedule_id: UUID) -> Schedule:
    query = select(Schedule).where(Schedule.id == schedule_id, Schedule.owner_id == user.id)
    schedule = await session.scalar(query)
    if schedule is None:
        raise ProblemException(404, "Schedule not found.")
    return schedule


async def create(
    session: AsyncSession, settings: Settings, user: User, data: ScheduleCreate
) -> Schedule:
    owned = select(Thread.id).where(Thread.id == data.thread_id, Thread.owner_id == user.id)
    if await session.scalar(owned) is None:
        raise ProblemException(404, "Thread not found.")
    count = select(func.count()).select_from(Schedule).where(Schedule.owner_id == user.id)
    if (await session.scalar(count) or 0) >= settings.schedules_per_user:
        raise ProblemException(409, f"At most {settings.schedules_per_user} schedules each.")
    fields = msgspec.structs.asdict(data)
    schedule = Schedule(owner_id=user.id, status="active", failures=0, **fields)
    schedule.created_at = clock.now()
    _plan(settings, schedule)
    session.add(schedule)
    await session.flush()
    on_commit(session, reminders.wakers.notify)
    return schedule


async def update(
    session: AsyncSession, settings: Settings, schedule: Schedule, data: ScheduleUpdate
) -> Schedule:
    changes: dict[str, Any] = data.sent_fields()
    for field, value in changes.items():
        setattr(schedule, field, value)
    if schedule.status == "active" or (schedule.status == "ended" and "run_at" in changes):
        schedule.status = "active"
        _plan(settings, schedule)
    else:
        _check(settings, schedule)
    return await _flushed(session, schedule)


async def pause(session: AsyncSession, schedule: Schedule, reason: str | None = None) -> Schedule:
    schedule.status, schedule.paused_reason, schedule.next_run_at = "paused", reason, None
    return await _flushed(session, schedule)


async def resume(session: AsyncSession, settings: Settings, schedule: Schedule) -> Schedule:
    """Run again from the next time after now (times missed while paused are skipped)."""
    if schedule.status == "paused":
        schedule.status, schedule.paused_reason, schedule.failures = "active", None, 0
        _plan(settings, schedule)
    return await _flushed(session, schedule)


async def delete(session: AsyncSession, schedule: Schedule) -> None:
    await session.delete(schedule)
    await session.flush()


def next_after(schedule: Schedule, after: datetime, count: int = 1) -> list[datetime]:
    return schedule_times.next_times(
        schedule.kind,
        schedule.rule,
        schedule.time_zone,
        after,
        anchor=schedule.created_at,
        run_at=schedule.run_at,
        count=count,
    )


def _plan(settings: Settings, schedule: Schedule) -> None:
    """Check the schedule and set its next time (a `once` in the past: a 400)."""
    _check(settings, schedule)
    times = next_after(schedule, clock.now())
    if schedule.kind == "once" and not times:
        raise ProblemException(400, "`run_at` is in the past.")
    schedule.next_run_at = times[0] if times else None
    if schedule.next_run_at is None:
        schedule.status = "ended"


def _check(settings: Settings, schedule: Schedule) -> None:
    try:
        schedule_times.zone(schedule.time_zone)
        if schedule.kind == "once":
            if schedule.run_at is None:
                raise schedule_times.BadSchedule("A `once` schedule needs `run_at`.")
            return
        if not schedule.rule:
            raise schedule_times.BadSchedule(f"A `{schedule.kind}` schedule needs `rule`.")
        schedule_times.check_rule(schedule.kind, schedule.rule)
    except schedule_times.BadSchedule as error:
        raise ProblemException(400, str(error)) from None
    times = next_after(schedule, clock.now(), GAP_SAMPLES)
    gaps = [later - earlier for earlier, later in pairwise(times)]
    least = timedelta(seconds=settings.schedule_min_interval_seconds)
    if any(gap < least for gap in gaps):
        raise ProblemException(
            400, f"Runs must be at least {least.total_seconds():.0f} seconds apart."
        )


async def _flushed(session: AsyncSession, schedule: Schedule) -> Schedule:
    await session.flush()
    on_commit(session, reminders.wakers.notify)
    return schedule
