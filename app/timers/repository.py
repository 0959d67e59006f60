"""The timers' statements: the claims of due reminders and schedules, the next times."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from sqlalchemy import Select, bindparam, func, select, update

from app.db.models import Schedule, Task

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
    due = (
        select(Task.id)
        .where(Task.remind_at <= bindparam("now"))
        .order_by(Task.remind_at)
        .limit(BATCH)
    )
    if postgres:
        due = due.with_for_update(skip_locked=True)
    return (
        update(Task)
        .where(Task.id.in_(due.scalar_subquery()), Task.remind_at.is_not(None))
        .values(reminded_at=Task.remind_at, remind_at=None)
        .returning(Task.id, Task.owner_id, Task.reminded_at)
        .execution_options(synchronize_session=False)
    )


def next_reminder() -> Select[Any]:
    """The earliest pending reminder's time (an index lookup: `ix_tasks_remind_at`)."""
    return select(func.min(Task.remind_at))


@lru_cache(maxsize=2)
def claim_due_schedules(postgres: bool) -> Any:
    """Due schedules, claimed like reminders: `next_run_at` moves to `last_run_at` (the
    time they were due, returned), so no other scheduler sees them due."""
    due = (
        select(Schedule.id)
        .where(Schedule.next_run_at <= bindparam("now"))
        .order_by(Schedule.next_run_at)
        .limit(SCHEDULE_BATCH)
    )
    if postgres:
        due = due.with_for_update(skip_locked=True)
    return (
        update(Schedule)
        .where(Schedule.id.in_(due.scalar_subquery()), Schedule.next_run_at.is_not(None))
        .values(last_run_at=Schedule.next_run_at, next_run_at=None)
        .returning(Schedule.id, Schedule.last_run_at)
        .execution_options(synchronize_session=False)
    )


def next_schedule() -> Select[Any]:
    return select(func.min(Schedule.next_run_at))
