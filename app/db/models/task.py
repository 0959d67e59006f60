from __future__ import annotations

from datetime import datetime
from uuid import UUID

from sqlalchemy import ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, DateTimeUTC


class Task(Base):
    __tablename__ = "tasks"
    __table_args__ = (
        Index("ix_tasks_owner_status", "owner_id", "status"),
        Index("ix_tasks_remind_at", "remind_at"),
    )

    owner_id: Mapped[UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    title: Mapped[str] = mapped_column(String(500))
    notes: Mapped[str | None] = mapped_column(Text, default=None)
    status: Mapped[str] = mapped_column(String(16), default="active")
    due_at: Mapped[datetime | None] = mapped_column(DateTimeUTC(timezone=True), default=None)
    completed_at: Mapped[datetime | None] = mapped_column(DateTimeUTC(timezone=True), default=None)
    # The reminder (app/tasks/reminders.py): due_at minus remind_before_seconds (0 or None:
    # at due_at). `remind_at` is the pending one (None: nothing to send; a snooze sets it
    # later); the scheduler moves it to `reminded_at` in the statement that claims it.
    remind_before_seconds: Mapped[int | None] = mapped_column(Integer, default=None)
    remind_at: Mapped[datetime | None] = mapped_column(DateTimeUTC(timezone=True), default=None)
    reminded_at: Mapped[datetime | None] = mapped_column(DateTimeUTC(timezone=True), default=None)
    # Where the task came from, when a tool created it.
    agent_id: Mapped[UUID | None] = mapped_column(
        ForeignKey("agents.id", ondelete="SET NULL"), default=None
    )
    thread_id: Mapped[UUID | None] = mapped_column(
        ForeignKey("threads.id", ondelete="SET NULL"), default=None
    )
