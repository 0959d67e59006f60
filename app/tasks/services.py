"""Tasks belong to a user; tools create them, the app lists and completes them."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Task, User
from app.lib.pagination import decode_cursor, encode_cursor
from app.lib.problems import ProblemException
from app.lib.time import utcnow
from app.tasks import repository
from app.tasks.schemas import TaskPage
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
    """Change the given fields (completing stamps completed_at, reopening clears it)."""
    status = changes.get("status")
    if status == "completed" and task.status != "completed":
        task.completed_at = utcnow()
    elif status == "active":
        task.completed_at = None
    for field, value in changes.items():
        setattr(task, field, value)
    await session.flush()
    return task


async def find_owned_task(session: AsyncSession, owner_id: UUID, task_id: UUID) -> Task | None:
    """The task if `owner_id` owns it (tools turn None into a user_error, not a 404)."""
    return await session.scalar(repository.owned_task(owner_id, task_id))


async def create_task(session: AsyncSession, owner_id: UUID, **fields: Any) -> Task:
    task = Task(owner_id=owner_id, status="active", **fields)
    session.add(task)
    await session.flush()
    return task
