"""A schedule on a thread: at each of its times a run starts there with its prompt.

`kind` says how the times are given: `once` (`run_at`), `rrule` (an RFC 5545 RRULE) or
`cron` (a five-field cron expression); the recurring ones are wall-clock times in
`time_zone` (IANA). `next_run_at` is the next time (null: paused, or a `once` that ran);
the scheduler claims it when due, in one statement, and sets the one after in the same
transaction as the run it queues. `failures` counts the runs in a row that failed (read
at each firing from `last_run_id`): at SCHEDULE_MAX_FAILURES the schedule pauses.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from sqlalchemy import ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import GUID, Base, DateTimeUTC


class Schedule(Base):
    __tablename__ = "schedules"
    __table_args__ = (
        Index("ix_schedules_owner", "owner_id", "created_at"),
        Index("ix_schedules_next_run_at", "next_run_at"),
    )

    owner_id: Mapped[UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    thread_id: Mapped[UUID] = mapped_column(ForeignKey("threads.id", ondelete="CASCADE"))
    prompt: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(String(8))  # once | rrule | cron
    rule: Mapped[str | None] = mapped_column(String(500), default=None)
    time_zone: Mapped[str] = mapped_column(String(64), default="UTC")
    run_at: Mapped[datetime | None] = mapped_column(DateTimeUTC(timezone=True), default=None)
    status: Mapped[str] = mapped_column(String(16), default="active")  # active|paused|ended
    paused_reason: Mapped[str | None] = mapped_column(String(200), default=None)
    next_run_at: Mapped[datetime | None] = mapped_column(DateTimeUTC(timezone=True), default=None)
    last_run_at: Mapped[datetime | None] = mapped_column(DateTimeUTC(timezone=True), default=None)
    last_run_id: Mapped[UUID | None] = mapped_column(GUID, default=None)
    failures: Mapped[int] = mapped_column(Integer, default=0)
