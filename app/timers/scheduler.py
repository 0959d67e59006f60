"""The one scheduler on the database: task reminders and scheduled runs, at their time.

One `BackgroundService` per process. Each round claims what is due (reminders:
app/timers/reminders.py, schedules: app/timers/schedule_runs.py), each kind with one
`UPDATE … RETURNING` (SKIP LOCKED on PostgreSQL, the write lock on SQLite) whose effect
(the push event, the queued run) is written in the same transaction: a host killed
between claim and effect rolls both back and another host claims the item again, so
each fires exactly once and no lease is needed for this step (the network send is the
push sender's, under its own fenced claims; the run is the runner's, under its lease).
Times are the database's (app/db/clock.py): hosts whose clocks disagree still fire an
item at one instant.

Between rounds it sleeps until the earliest pending time (at most
`REMINDER_POLL_SECONDS`), and a change in this process that moves one wakes it at once
(app/tasks/reminders.wakers); a change made in another process is that process's
scheduler's to notice, and this one's poll backs both up. No polling storm: an idle
deployment makes one `min()` query per process per poll, and a time that is due while
another host's claim holds its rows (skipped: SKIP LOCKED) is looked at again after
`HELD_ELSEWHERE_SECONDS`, not at once in a loop.
"""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db import clock
from app.lib.background import BackgroundService
from app.settings import Settings
from app.tasks import reminders as task_reminders
from app.timers import reminders, repository, schedule_runs

logger = logging.getLogger(__name__)
HELD_ELSEWHERE_SECONDS = 0.25  # the wait for rows another host's claim holds


class TimerScheduler:
    def __init__(
        self,
        settings: Settings,
        sessions: async_sessionmaker[AsyncSession],
        *,
        postgres: bool,
        send_reminders: bool = True,
    ) -> None:
        """`send_reminders`: push is on (with it off, reminders wait, and are sent or
        dropped by the lateness rule once it is on)."""
        self.settings, self._sessions, self._postgres = settings, sessions, postgres
        self._send_reminders = send_reminders
        self._sleep = settings.reminder_poll_seconds
        self._service = BackgroundService(
            "timer-scheduler",
            self._round,
            period=lambda: self._sleep,
            logger=logger,
            failure="timer scheduler round failed",  # the database is away: retried
            level=logging.WARNING,
            immediately=True,  # what fell due while we were down: at once
            retry=1.0,
        )

    def wake(self) -> None:
        self._service.wake()

    def start(self) -> None:
        task_reminders.wakers.add(self.wake)
        self._service.start()

    async def stop(self) -> None:
        task_reminders.wakers.remove(self.wake)
        await self._service.stop()

    async def _round(self) -> float | None:
        claimed = 0
        if self._send_reminders:
            claimed = await reminders.fire_due(self._sessions, self.settings, self._postgres)
        started = await schedule_runs.fire_due(
            self._sessions, self.settings, postgres=self._postgres
        )
        if claimed == repository.BATCH or started == repository.SCHEDULE_BATCH:
            return 0.0  # more may be due: again at once
        self._sleep = await self._until_next()
        if self._sleep == 0.0 and not (claimed or started):
            # Due, yet nothing to take: another host's claim holds those rows (SKIP
            # LOCKED) until it commits or dies. Looking again at once would spin.
            self._sleep = min(HELD_ELSEWHERE_SECONDS, self.settings.reminder_poll_seconds)
        return None  # sleep `_sleep`, or less if woken

    async def _until_next(self) -> float:
        async with self._sessions() as session:
            times: list[datetime | None] = [await session.scalar(repository.next_schedule())]
            if self._send_reminders:
                times.append(await session.scalar(repository.next_reminder()))
        poll = self.settings.reminder_poll_seconds
        pending = [at for at in times if at is not None]
        if not pending:
            return poll
        return max(0.0, min(poll, (min(pending) - clock.now()).total_seconds()))
