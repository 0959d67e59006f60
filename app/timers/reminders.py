"""The reminder scheduler: each due task reminder becomes one push, once, across hosts.

One `BackgroundService` per process. Each round claims the due reminders in one
statement (app/timers/repository.py) and, in the same transaction, writes a push event
for each (app/push/events.task_reminder); the commit wakes the push sender. Claim and
event commit together: a host killed between them rolls both back and another host
claims the reminder again, so no lease is needed for this step (the network send is the
push sender's, under its own fenced claims). Times are the database's (app/db/clock.py):
hosts whose clocks disagree still fire a reminder at one instant.

Between rounds it sleeps until the earliest pending reminder (at most
`REMINDER_POLL_SECONDS`), and a change in this process that moves one wakes it at once
(app/tasks/reminders.wakers); a change made in another process is that process's
scheduler's to notice, and this one's poll backs both up.

Catch-up: after downtime every overdue reminder is claimed in batches. One due within
`REMINDER_LATE_AFTER_SECONDS` is sent as is; one later but within
`REMINDER_MAX_LATENESS_SECONDS` is sent with `late: true`; one older than that is
dropped (claimed, logged, counted, not sent): a burst of day-old reminders after an
outage helps nobody.
"""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db import clock
from app.lib.background import BackgroundService
from app.observability import metrics
from app.push import events
from app.settings import Settings
from app.tasks import reminders
from app.timers import repository

logger = logging.getLogger(__name__)


class ReminderScheduler:
    def __init__(
        self,
        settings: Settings,
        sessions: async_sessionmaker[AsyncSession],
        *,
        postgres: bool,
    ) -> None:
        self.settings, self._sessions, self._postgres = settings, sessions, postgres
        self._sleep = settings.reminder_poll_seconds
        self._service = BackgroundService(
            "reminder-scheduler",
            self._round,
            period=lambda: self._sleep,
            logger=logger,
            failure="reminder scheduler round failed",  # the database is away: retried
            level=logging.WARNING,
            immediately=True,  # reminders that fell due while we were down: at once
            retry=1.0,
        )

    def wake(self) -> None:
        self._service.wake()

    def start(self) -> None:
        reminders.wakers.add(self.wake)
        self._service.start()

    async def stop(self) -> None:
        reminders.wakers.remove(self.wake)
        await self._service.stop()

    async def _round(self) -> float | None:
        claimed = await self.fire_due()
        if claimed == repository.BATCH:
            return 0.0  # more may be due: again at once
        self._sleep = await self._until_next()
        return None  # sleep `_sleep`, or less if woken

    async def fire_due(self) -> int:
        """Claim the due reminders and write their pushes; how many were claimed."""
        now = clock.now()
        statement = repository.claim_due_reminders(self._postgres)
        sent = dropped = 0
        async with self._sessions() as session:
            rows = (await session.execute(statement, {"now": now})).all()
            for task_id, owner_id, due in rows:
                lateness = (now - due).total_seconds()
                if lateness > self.settings.reminder_max_lateness_seconds:
                    dropped += 1
                    continue
                late = lateness > self.settings.reminder_late_after_seconds
                events.task_reminder(session, task_id, owner_id, due, late=late)
                sent += 1
            await session.commit()
        if dropped:
            logger.info(
                "%d reminder(s) dropped: due more than %.0f s ago",
                dropped,
                self.settings.reminder_max_lateness_seconds,
            )
        metrics.reminders_fired(sent, dropped)
        return len(rows)

    async def _until_next(self) -> float:
        async with self._sessions() as session:
            next_at: datetime | None = await session.scalar(repository.next_reminder())
        poll = self.settings.reminder_poll_seconds
        if next_at is None:
            return poll
        return max(0.0, min(poll, (next_at - clock.now()).total_seconds()))
