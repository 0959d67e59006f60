"""Scheduled runs: each due schedule starts one run in its thread, once, across hosts.

The claim is one statement (app/timers/repository.claim_due_schedules: `next_run_at`
moves to `last_run_at`, SKIP LOCKED on PostgreSQL) and, in the same transaction, the
schedule's prompt is posted to its thread as a user message by the path the API uses
(app/threads/messages.post_user_message: the message, its queued run, the runner's
wake-up after commit) and the schedule's next time is set. Its cells stream as every
run's do, and its end is pushed as every run's is (`run_completed`, `run_failed`).

Catch-up: after downtime a schedule fires once for all the times it missed (its next
time is then the first after now), and not at all if the missed time is older than
`REMINDER_MAX_LATENESS_SECONDS`. Failures: before firing, the previous run's end is
read; at `SCHEDULE_MAX_FAILURES` failed runs in a row the schedule is paused instead
(`paused_reason`) and its owner is told by a `schedule_paused` push.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db import clock
from app.db.models import Run, Schedule, Thread
from app.lib.problems import ProblemException
from app.push import events
from app.schedules import services as schedules
from app.settings import Settings
from app.threads.messages import post_user_message
from app.threads.schemas import MessageCreate
from app.timers import repository
from app.timers.repository import scheduled_id
from app.usage.budget import BudgetSpent, refuse_if_spent

logger = logging.getLogger(__name__)


async def fire_due(
    sessions: async_sessionmaker[AsyncSession], settings: Settings, *, postgres: bool
) -> int:
    """Claim the due schedules and start their runs; how many were claimed."""
    now = clock.now()
    async with sessions() as session:
        rows = (await session.execute(repository.claim_due_schedules(postgres), {"now": now})).all()
        for schedule_id, due in rows:
            schedule = await session.get(Schedule, schedule_id)
            if schedule is not None:
                await _fire(session, settings, schedule, due, now)
        await session.commit()
    return len(rows)


async def _fire(
    session: AsyncSession, settings: Settings, schedule: Schedule, due: datetime, now: datetime
) -> None:
    await _count_last_run(session, schedule)
    if schedule.failures >= settings.schedule_max_failures:
        reason = f"Its last {schedule.failures} runs failed."
        await schedules.pause(session, schedule, reason)
        events.schedule_paused(session, schedule.id, schedule.owner_id, schedule.thread_id)
        logger.info("schedule %s paused: %s", schedule.id, reason)
        return
    if (now - due).total_seconds() <= settings.reminder_max_lateness_seconds:
        if why := await _held_back(session, settings, schedule, now):
            logger.info("schedule %s skipped %s: %s", schedule.id, due.isoformat(), why)
        else:
            await _start_run(session, schedule, due)
    schedule.last_run_at = due
    following = schedules.next_after(schedule, max(now, due))
    schedule.next_run_at = following[0] if following else None
    if schedule.next_run_at is None:
        schedule.status = "ended"


async def _count_last_run(session: AsyncSession, schedule: Schedule) -> None:
    """The previous run's end: a failure counts, a success clears the count."""
    if schedule.last_run_id is None:
        return
    run = await session.get(Run, schedule.last_run_id)
    if run is not None and run.status == "failed":
        schedule.failures += 1
    elif run is not None and run.status == "completed":
        schedule.failures = 0


async def _held_back(
    session: AsyncSession, settings: Settings, schedule: Schedule, now: datetime
) -> str | None:
    """Why this time starts no run: the owner's monthly budget is spent, or their
    schedules started `SCHEDULE_RUNS_PER_DAY` runs in the last 24 hours (None: it runs)."""
    try:
        await refuse_if_spent(session, schedule.owner_id, settings)
    except BudgetSpent as spent:
        return spent.detail
    since = now - timedelta(days=1)
    started = await session.scalar(repository.scheduled_runs_since(schedule.owner_id, since))
    if (started or 0) >= settings.schedule_runs_per_day:
        return f"{started} scheduled runs in 24 hours (SCHEDULE_RUNS_PER_DAY)"
    return None


async def _start_run(session: AsyncSession, schedule: Schedule, due: datetime) -> None:
    thread = await session.get(Thread, schedule.thread_id)
    if thread is None:
        return  # deleted with its schedules (cascade) meanwhile
    # The message's client id names the schedule and the time: one message per time,
    # and how the daily count finds the runs schedules started.
    asked = MessageCreate(content=schedule.prompt, client_message_id=scheduled_id(schedule, due))
    try:
        _, run, _ = await post_user_message(session, thread, asked)
    except ProblemException as refused:  # the agent refuses a message while it runs
        logger.info("schedule %s skipped a time: %s", schedule.id, refused.detail)
        return
    schedule.last_run_id = run.id
