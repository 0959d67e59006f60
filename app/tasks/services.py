"""Tasks belong to a user; tools create them, the app lists and completes them."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import and_, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Task, User
from app.lib.pagination import decode_cursor, encode_cursor
from app.lib.problems import ProblemException
from app.lib.time import utcnow
from app.tasks.schemas import TaskPage, TaskRead


def task_read(task: Task) -> TaskRead:
    return TaskRead(
        id=task.id,
        title=task.title,
        notes=task.notes,
        status=task.status,  # type: ignore[arg-type]
        due_at=task.due_at,
        completed_at=task.completed_at,
        agent_id=task.agent_id,
        thread_id=task.thread_id,
        created_at=task.created_at,
        updated_at=task.updated_at,
    )


async def list_tasks(
    session: AsyncSession, user: User, status: str | None, limit: int, cursor: str | None
) -> TaskPage:
    query = (
        select(Task)
        .where(Task.owner_id == user.id)
        .order_by(Task.created_at.desc(), Task.id.desc())
        .limit(limit + 1)
    )
    if status:
        query = query.where(Task.status == status)
    if cursor:
        at, id_ = decode_cursor(cursor)
        query = query.where(or_(Task.created_at < at, and_(Task.created_at == at, Task.id < id_)))
    rows = list(await session.scalars(query))
    page = rows[:limit]
    next_cursor = encode_cursor(page[-1].created_at, page[-1].id) if len(rows) > limit else None
    return TaskPage(items=[task_read(t) for t in page], next_cursor=next_cursor)


async def get_owned_task(session: AsyncSession, user: User, task_id: UUID) -> Task:
    task = await session.scalar(select(Task).where(Task.id == task_id, Task.owner_id == user.id))
    if task is None:
        raise ProblemException(404, "Task not found.")
    return task


async def update_task(session: AsyncSession, task: Task, changes: dict[str, Any]) -> Task:
    """Change the given fields (completing stamps completed_at, reopening clears it)."""
    apply_task_changes(task, changes)
    await session.flush()
    return task


def apply_task_changes(task: Task, changes: dict[str, Any]) -> Task:
    status = changes.get("status")
    if status == "completed" and task.status != "completed":
        task.completed_at = utcnow()
    elif status == "active":
        task.completed_at = None
    for field, value in changes.items():
        setattr(task, field, value)
    return task


async def find_owned_task(session: AsyncSession, owner_id: UUID, task_id: UUID) -> Task | None:
    """The task if `owner_id` owns it (tools turn None into a user_error, not a 404)."""
    return await session.scalar(select(Task).where(Task.id == task_id, Task.owner_id == owner_id))


async def create_task(session: AsyncSession, owner_id: UUID, **fields: Any) -> Task:
    task = Task(owner_id=owner_id, status="active", **fields)
    session.add(task)
    await session.flush()
    return task
