"""The timers' statements: the claims of due reminders and schedules, the next times."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache
from typing import Any
from uuid import UUID

from sqlalchemy import Select, bindparam, func, select, update

from app.db.models import Schedule, Task, Thread, ThreadMessage

BATCH = 200
SCHEDULE_BATCH = 20  # each starts a run: a few statements apiece


@lru_cache(maxsize=2)
def claim_due_reminders(postgres: bool) -> Any:
    """Due reminders (`remind_at <= :now`, oldest first), taken in one statement: each
    row's `remind_at` moves to `reminded_at` (SET reads the old row on both dialects), so
    a reminder claimed is no longer due for anyone, and RETURNING says when it was due.
    On PostgreSQL the rows are locked SKIP LOCKED (two schedulers take different ones);
    on SQLite the write lock serialises them. The caller writes the pushes in the same
    transaction: claim and push commit together or not at all."""
    return _claim_due(Task, Task.remind_at, Task.reminded_at, BATCH, postgres).returning(
        Task.id, Task.owner_id, Task.reminded_at
    )


def _claim_due(model: Any, due_at: Any, claimed_at: Any, batch: int, postgres: bool) -> Any:
    """The one claim of both timers: up to `batch` rows due (`due_at <= :now`, oldest
    first) move `due_at` to `claimed_at` in one UPDATE (SKIP LOCKED on PostgreSQL)."""
    due = select(model.id).where(due_at <= bindparam("now")).order_by(due_at).limit(batch)
    if postgres:
        due = due.with_for_update(skip_locked=True)
    return (
        update(model)
        .where(model.id.in_(due.scalar_subquery()), due_at.is_not(None))
        .values({claimed_at: due_at, due_at: None})
        .execution_options(synchronize_session=False)
    )


def next_reminder() -> Select[Any]:
    """The earliest pending reminder's time (an index lookup: `ix_tasks_remind_at`)."""
    return select(func.min(Task.remind_at))


@lru_cache(maxsize=2)
def claim_due_schedules(postgres: bool) -> Any:
    """Due schedules, claimed like reminders: `next_run_at` moves to `last_run_at` (the
    time they were due, returned), so no other scheduler sees them due."""
    claim = _claim_due(
        Schedule, Schedule.next_run_at, Schedule.last_run_at, SCHEDULE_BATCH, postgres
    )
    return claim.returning(Schedule.id, Schedule.last_run_at)


def next_schedule() -> Select[Any]:
    return select(func.min(Schedule.next_run_at))


SCHEDULED_PREFIX = "schedule:"  # the client id of a message a schedule posted


def scheduled_id(schedule: Schedule, due: datetime) -> str:
    return f"{SCHEDULED_PREFIX}{schedule.id}:{due.astimezone(UTC):%Y-%m-%dT%H:%M:%S.%fZ}"


def scheduled_runs_since(owner_id: UUID, since: datetime) -> Select[Any]:
    """How many messages the owner's schedules posted since `since` (each started a run)."""
    return (
        select(func.count())
        .select_from(ThreadMessage)
        .join(Thread, Thread.id == ThreadMessage.thread_id)
        .where(
            Thread.owner_id == owner_id,
            ThreadMessage.client_message_id.startswith(SCHEDULED_PREFIX, autoescape=True),
            ThreadMessage.created_at >= since,
        )
    )
