"""Task rows to response Structs."""

from __future__ import annotations

import msgspec

from app.db.models import Task
from app.tasks.schemas import TaskRead


def task_read(task: Task) -> TaskRead:
    return msgspec.convert(task, TaskRead, from_attributes=True)
