"""Tasks belong to a user; tools create them, the app lists and completes them."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy.ext.asyncio import AsyncSession

from app.db import clock
from app.db.models import Task, User
from app.lib.pagination import decode_cursor, encode_cursor
from app.lib.problems import ProblemException
from app.lib.time import utcnow
from app.tasks import reminders, repository
from app.tasks.schemas import TaskPage, TaskReminderAnswer
from app.tasks.serializers import task_read


async def list_tasks(
    session: AsyncSession, user: User, status: str | None, limit: int, cursor: str | None
) -> TaskPage:
    after = decode_cursor(cursor) if cursor else None
    rows = list(await session.scalars(repository.task_page(user.id, status, limit, after)))
    page = rows[:limit]
    next_cursor = encode_cursor(page[-1].created_at, page[-1].id) if len(rows) > limit else None
    return TaskPage(items=[task_read(t) for t in page], next_cursor=next_cursor)


async def get_owned_task(session: AsyncSession, user: User, task_id: UUID) -> Task:
    task = await find_owned_task(session, user.id, task_id)
    if task is None:
        raise ProblemException(404, "Task not found.")
    return task


async def update_task(session: AsyncSession, task: Task, changes: dict[str, Any]) -> Task:
    """Change the given fields (completing stamps completed_at, reopening clears it; the
    reminder follows the due time, its lead and the status)."""
    status = changes.get("status")
    if status == "completed" and task.status != "completed":
        task.completed_at = utcnow()
    elif status == "active":
        task.completed_at = None
    moved = reminders.apply_changes(task, changes, clock.now())
    await session.flush()
    reminders.changed(session, task, moved)
    return task


async def snooze_task(session: AsyncSession, task: Task, until: datetime) -> Task:
    """Recall the task again at `until` (its due time unchanged)."""
    task.remind_at = until
    await session.flush()
    reminders.changed(session, task, {"remind_at"})
    return task


async def answer_reminder(session: AsyncSession, task: Task, answer: TaskReminderAnswer) -> Task:
    """An action of the reminder's notification: complete the task, or snooze it."""
    if answer.action == "complete":
        return await update_task(session, task, {"status": "completed"})
    if task.status != "active":
        raise ProblemException(409, "The task is completed: there is nothing to snooze.")
    until = reminders.snooze_until(answer.action, clock.now(), _zone(answer.time_zone))
    return await snooze_task(session, task, until)


def _zone(name: str | None) -> ZoneInfo:
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        raise ProblemException(400, f"Unknown time zone {name!r}: give an IANA name.") from None


async def find_owned_task(session: AsyncSession, owner_id: UUID, task_id: UUID) -> Task | None:
    """The task if `owner_id` owns it (tools turn None into a user_error, not a 404)."""
    return await session.scalar(repository.owned_task(owner_id, task_id))


async def create_task(session: AsyncSession, owner_id: UUID, **fields: Any) -> Task:
    task = Task(owner_id=owner_id, status="active", **fields)
    reminders.rearm(task, clock.now())
    session.add(task)
    await session.flush()
    reminders.changed(session, task, {"remind_at"} if task.remind_at else set())
    return task
