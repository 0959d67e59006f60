"""A task's reminder: when it is due, what moves it, and who hears of the change.

A task with `due_at` is recalled by push at `due_at - remind_before_seconds` (at
`due_at` when that is unset), once. `Task.remind_at` holds the pending reminder: set
when the due time or the lead changes, or the task is reopened; cleared when the task
is completed or has no due time; moved later by a snooze. A time already past when it is
set arms nothing (a task created "due yesterday" is not announced as late). The
scheduler (app/timers/reminders.py) claims a due `remind_at` and writes the push in one
transaction; it sleeps until the earliest `remind_at` and is woken here, after the commit
of a change that moves one (`wakers`).

Every committed change of a task is told to `task_listeners` (the realtime socket sends
it to the owner's other devices as a `task` frame).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Task
from app.db.outbox import on_commit
from app.lib.listeners import Listeners
from app.tasks.schemas import TaskRead
from app.tasks.serializers import task_read

# The fields whose change re-arms the reminder.
REMINDER_FIELDS = frozenset({"due_at", "remind_before_seconds", "status"})
SNOOZES = {"snooze_10m": timedelta(minutes=10), "snooze_1h": timedelta(hours=1)}
TOMORROW_HOUR = 9  # "tomorrow": 9:00 in the user's time zone

wakers: Listeners[Callable[[], None]] = Listeners("reminder waker")
# Told (owner id, the task as the API serves it) after each committed change.
task_listeners: Listeners[Callable[[UUID, TaskRead], None]] = Listeners("task listener")


def reminder_time(task: Task) -> datetime | None:
    """When the task's reminder is due (None: an ended task, or one without a due time)."""
    if task.status != "active" or task.due_at is None:
        return None
    return task.due_at - timedelta(seconds=task.remind_before_seconds or 0)


def rearm(task: Task, now: datetime) -> None:
    """Set the pending reminder from the task's fields (one already past arms nothing)."""
    at = reminder_time(task)
    task.remind_at = at if at is not None and at > now else None


def snooze_until(action: str, now: datetime, time_zone: ZoneInfo) -> datetime:
    """The snooze's new reminder time: 10 minutes or an hour from now, or tomorrow at
    9:00 in the user's time zone (a wall-clock time: DST changes are zoneinfo's)."""
    if action in SNOOZES:
        return now + SNOOZES[action]
    local = now.astimezone(time_zone) + timedelta(days=1)
    nine = datetime(local.year, local.month, local.day, TOMORROW_HOUR, tzinfo=time_zone)
    return nine.astimezone(now.tzinfo)


def changed(session: AsyncSession, task: Task, fields: frozenset[str] | set[str]) -> None:
    """After commit: the owner's devices hear of the task; the scheduler, if its reminder
    may have moved."""
    owner_id, read = task.owner_id, task_read(task)
    on_commit(session, lambda: task_listeners.notify(owner_id, read))
    if fields & (REMINDER_FIELDS | {"remind_at"}):
        on_commit(session, wakers.notify)


def apply_changes(task: Task, changes: dict[str, Any], now: datetime) -> set[str]:
    """The fields of an update, and the reminder they imply (only a field whose value
    changes re-arms it: a snoozed task renamed keeps its snooze); the changed fields."""
    moved = {field for field, value in changes.items() if getattr(task, field) != value}
    for field in moved:
        setattr(task, field, changes[field])
    if REMINDER_FIELDS & moved:
        rearm(task, now)
    return moved
