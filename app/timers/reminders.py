"""Task reminders: each due reminder becomes one push, once, across hosts.

The claim moves each due `remind_at` to `reminded_at` in one statement
(app/timers/repository.claim_due_reminders) and, in the same transaction, a push event
is written for each (app/push/events.task_reminder); the commit wakes the push sender.
The scheduler (app/timers/scheduler.py) calls it at each due time.

Catch-up: after downtime every overdue reminder is claimed in batches. One due within
`REMINDER_LATE_AFTER_SECONDS` is sent as is; one later but within
`REMINDER_MAX_LATENESS_SECONDS` is sent with `late: true`; one older than that is
dropped (claimed, logged, counted, not sent): a burst of day-old reminders after an
outage helps nobody.
"""

from __future__ import annotations

import logging

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db import clock
from app.observability import metrics
from app.push import events
from app.settings import Settings
from app.timers import repository

logger = logging.getLogger(__name__)


async def fire_due(
    sessions: async_sessionmaker[AsyncSession], settings: Settings, postgres: bool
) -> int:
    """Claim the due reminders and write their pushes; how many were claimed."""
    now = clock.now()
    sent = dropped = 0
    async with sessions() as session:
        rows = (await session.execute(repository.claim_due_reminders(postgres), {"now": now})).all()
        for task_id, owner_id, due in rows:
            lateness = (now - due).total_seconds()
            if lateness > settings.reminder_max_lateness_seconds:
                dropped += 1
                continue
            late = lateness > settings.reminder_late_after_seconds
            events.task_reminder(session, task_id, owner_id, due, late=late)
            sent += 1
        await session.commit()
    if dropped:
        logger.info(
            "%d reminder(s) dropped: due more than %.0f s ago",
            dropped,
            settings.reminder_max_lateness_seconds,
        )
    metrics.reminders_fired(sent, dropped)
    return len(rows)
