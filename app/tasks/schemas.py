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
RemindBefore = Annotated[
    int,
    msgspec.Meta(
        ge=0,
        le=30 * 24 * 3600,
        description="Remind this many seconds before `due_at` (0 or null: at `due_at`).",
    ),
]
# The notification's actions (docs/api.md, "Task reminders"): the identifiers of the
# TASK_REMINDER category's UNNotificationActions, lower-cased.
ReminderAction = Literal["complete", "snooze_10m", "snooze_1h", "snooze_tomorrow"]
TimeZoneName = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=64,
        examples=["Europe/Berlin"],
        description="IANA time zone of the user (`TimeZone.current.identifier`): "
        "`snooze_tomorrow` is 9:00 there. Default UTC.",
    ),
]


class TaskRead(Schema):
    id: UUID
    title: str
    notes: str | None
    status: TaskStatus
    due_at: datetime | None
    remind_before_seconds: int | None
    # The pending reminder (null: none; a snooze moves it later than due_at - lead).
    remind_at: datetime | None
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
    remind_before_seconds: RemindBefore | msgspec.UnsetType | None = msgspec.UNSET


class TaskReminderAnswer(Input):
    """What the user chose on a reminder's notification."""

    action: ReminderAction
    time_zone: TimeZoneName | None = None
