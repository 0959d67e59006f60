"""Task queries: statement builders that services compose and execute."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from sqlalchemy import Select, and_, or_, select

from app.db.models import Task


def owned_tasks(owner_id: UUID) -> Select[tuple[Task]]:
    return select(Task).where(Task.owner_id == owner_id)


def owned_task(owner_id: UUID, task_id: UUID) -> Select[tuple[Task]]:
    return owned_tasks(owner_id).where(Task.id == task_id)


def task_page(
    owner_id: UUID, status: str | None, limit: int, after: tuple[datetime, UUID] | None
) -> Select[tuple[Task]]:
    """Newest first; one row more than `limit` tells whether another page follows."""
    query = owned_tasks(owner_id).order_by(Task.created_at.desc(), Task.id.desc()).limit(limit + 1)
    if status:
        query = query.where(Task.status == status)
    if after is not None:
        at, id_ = after
        query = query.where(or_(Task.created_at < at, and_(Task.created_at == at, Task.id < id_)))
    return query
