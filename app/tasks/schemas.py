from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

import msgspec

from app.lib.schema import AwareDatetime, Input, Schema

TaskStatus = Literal["active", "completed"]
# A list's filter: either status, or `all` (the tasks tool's `list` takes the same words).
TaskStatusFilter = Literal["active", "completed", "all"]
TaskTitle = Annotated[str, msgspec.Meta(min_length=1, max_length=500)]
TaskNotes = Annotated[str, msgspec.Meta(max_length=10_000)]


class TaskRead(Schema):
    id: UUID
    title: str
    notes: str | None
    status: TaskStatus
    due_at: datetime | None
    completed_at: datetime | None
    agent_id: UUID | None
    thread_id: UUID | None
    created_at: datetime
    updated_at: datetime


class TaskPage(Schema):
    items: list[TaskRead]
    next_cursor: str | None


class TaskUpdate(Input):
    title: TaskTitle | msgspec.UnsetType = msgspec.UNSET
    notes: TaskNotes | msgspec.UnsetType | None = msgspec.UNSET
    status: TaskStatus | msgspec.UnsetType = msgspec.UNSET
    due_at: AwareDatetime | msgspec.UnsetType | None = msgspec.UNSET
