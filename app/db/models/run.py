from __future__ import annotations

import enum
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import BigInteger, Boolean, ForeignKey, Index, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, DateTimeUTC, JsonB

NANO = 1_000_000_000  # cost_nanousd per USD


class RunStatus(enum.StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


ACTIVE_RUN_STATUSES = (RunStatus.QUEUED.value, RunStatus.RUNNING.value)


class Run(Base):
    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_thread_status", "thread_id", "status"),
        Index("ix_runs_status_lease", "status", "lease_expires_at"),
        Index(
            "ix_runs_push_due",
            "push_due",
            sqlite_where=text("push_due = 1"),
            postgresql_where=text("push_due"),
        ),
    )

    thread_id: Mapped[UUID] = mapped_column(ForeignKey("threads.id", ondelete="CASCADE"))
    agent_id: Mapped[UUID] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"))
    trigger_message_id: Mapped[UUID | None] = mapped_column(
        ForeignKey("thread_messages.id", ondelete="SET NULL"), default=None
    )
    status: Mapped[str] = mapped_column(String(16), default=RunStatus.QUEUED.value)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    # Per-run request metadata: the `tools` allow-list and pre-model `tool_calls`.
    options: Mapped[dict[str, Any] | None] = mapped_column(JsonB, default=None)
    started_at: Mapped[datetime | None] = mapped_column(DateTimeUTC(timezone=True), default=None)
    finished_at: Mapped[datetime | None] = mapped_column(DateTimeUTC(timezone=True), default=None)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    # Lease held by the runner executing this run; expired leases are reaped.
    lease_owner: Mapped[str | None] = mapped_column(String(100), default=None)
    lease_expires_at: Mapped[datetime | None] = mapped_column(
        DateTimeUTC(timezone=True), default=None
    )
    # The lease's fencing token: raised by every claim and by the reaper that fails the
    # run, so a runner that lost its lease has every later write refused
    # (app/threads/fence.py).
    lease_epoch: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    # Set by the UPDATE that ends the run when push is on and someone may need to hear of
    # it (a device not watching the thread, an open Live Activity): the run row is its
    # own push outbox entry, so a turn that pushes nothing writes nothing more
    # (app/push/events.py). Cleared when the sender fans it out.
    push_due: Mapped[bool | None] = mapped_column(Boolean, default=None)
    # The run's model usage, summed over its model calls as the providers reported them
    # (app/orchestrator/door/usage.py); None until its end. The cost in billionths of a USD, an
    # integer (sums exactly; a float column's result processing on asyncpg needs the
    # column's type code, which app/db/direct.py's prebuilt reads do not give): None, no
    # price known.
    input_tokens: Mapped[int | None] = mapped_column(BigInteger, default=None)
    output_tokens: Mapped[int | None] = mapped_column(BigInteger, default=None)
    cached_tokens: Mapped[int | None] = mapped_column(BigInteger, default=None)
    reasoning_tokens: Mapped[int | None] = mapped_column(BigInteger, default=None)
    cost_nanousd: Mapped[int | None] = mapped_column(BigInteger, default=None)

    @property
    def usage(self) -> dict[str, Any]:
        return usage_of(self)


def usage_of(run: Any) -> dict[str, Any]:
    """A run's usage columns as one object (the API's `RunRead.usage`; zeros if none), of
    an ORM run or a stored one (app/threads/records.py)."""
    return {
        "input_tokens": run.input_tokens or 0,
        "output_tokens": run.output_tokens or 0,
        "cached_tokens": run.cached_tokens or 0,
        "reasoning_tokens": run.reasoning_tokens or 0,
        "cost_usd": None if run.cost_nanousd is None else run.cost_nanousd / NANO,
    }
