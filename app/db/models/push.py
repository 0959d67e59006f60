"""The push outbox: events written with the change that causes them, and deliveries.

A `PushEvent` is added in the same transaction as the change (a run ended, a tool call
waits for the user): committed together or not at all. The sender (app/push/sender.py)
fans each event out to `PushDelivery` rows, one per device or Live Activity token,
unique per (event_key, token) so one event is never delivered twice to one token.
`LiveActivity` is an ActivityKit push token registered for a thread's run;
`push_presence` says which threads have a live socket in some server process.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import (
    BigInteger,
    Column,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import GUID, Base, DateTimeUTC, JsonB, metadata
from app.db.models.install_token import InstallToken


class PushEvent(Base):
    __tablename__ = "push_events"
    __table_args__ = (Index("ix_push_events_pending", "fanned_out_at"),)

    # run_ended | tool_waiting | test
    kind: Mapped[str] = mapped_column(String(32))
    event_key: Mapped[str] = mapped_column(String(200))
    user_id: Mapped[UUID | None] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), default=None
    )
    thread_id: Mapped[UUID | None] = mapped_column(
        ForeignKey("threads.id", ondelete="CASCADE"), default=None
    )
    run_id: Mapped[UUID | None] = mapped_column(GUID, default=None)
    message_id: Mapped[UUID | None] = mapped_column(GUID, default=None)
    seq: Mapped[int | None] = mapped_column(BigInteger, default=None)
    data: Mapped[dict[str, Any] | None] = mapped_column(JsonB, default=None)
    fanned_out_at: Mapped[datetime | None] = mapped_column(DateTimeUTC(timezone=True), default=None)
    # Not fanned out before `next_attempt_at` (a reminder's time, or a retry's). An event
    # whose fan-out fails is retried alone (the others go on): after each failure
    # `next_attempt_at` moves back with the backoff; after PUSH_MAX_ATTEMPTS it is
    # dead-lettered (`dead_at`, `last_error` say when and why) and never tried again.
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None] = mapped_column(
        DateTimeUTC(timezone=True), default=None
    )
    last_error: Mapped[str | None] = mapped_column(Text, default=None)
    dead_at: Mapped[datetime | None] = mapped_column(DateTimeUTC(timezone=True), default=None)


class LiveActivity(Base):
    __tablename__ = "live_activities"
    __table_args__ = (
        Index("uq_live_activities_token", "push_token", unique=True),
        Index("ix_live_activities_thread", "thread_id", "ended_at"),
    )

    user_id: Mapped[UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    thread_id: Mapped[UUID] = mapped_column(ForeignKey("threads.id", ondelete="CASCADE"))
    # The run it follows; None: the thread's next run (bound when that run is seen).
    run_id: Mapped[UUID | None] = mapped_column(GUID, default=None)
    # thread: registered on the thread (its current or next run); run: on one run.
    scope: Mapped[str] = mapped_column(String(8), default="thread")
    push_token: Mapped[str] = mapped_column(String(400))
    environment: Mapped[str] = mapped_column(String(16))
    last_state: Mapped[dict[str, Any] | None] = mapped_column(JsonB, default=None)
    last_sent_at: Mapped[datetime | None] = mapped_column(DateTimeUTC(timezone=True), default=None)
    updates_sent: Mapped[int] = mapped_column(Integer, default=0)
    ended_at: Mapped[datetime | None] = mapped_column(DateTimeUTC(timezone=True), default=None)


class LiveActivityStartToken(InstallToken, Base):
    """An app install's ActivityKit push-to-start token (iOS 17.2+): a run its user started
    elsewhere (another device, a shortcut, a schedule) starts a Live Activity by push."""

    __tablename__ = "live_activity_start_tokens"

    token: Mapped[str] = mapped_column(String(400))


class PushDelivery(Base):
    __tablename__ = "push_deliveries"
    __table_args__ = (
        Index("uq_push_deliveries_event_token", "event_key", "token", unique=True),
        Index("ix_push_deliveries_due", "status", "next_attempt_at"),
    )

    event_key: Mapped[str] = mapped_column(String(200))
    token: Mapped[str] = mapped_column(String(400))
    device_id: Mapped[UUID | None] = mapped_column(
        ForeignKey("devices.id", ondelete="CASCADE"), default=None
    )
    live_activity_id: Mapped[UUID | None] = mapped_column(
        ForeignKey("live_activities.id", ondelete="CASCADE"), default=None
    )
    environment: Mapped[str] = mapped_column(String(16))
    topic: Mapped[str] = mapped_column(String(300))
    push_type: Mapped[str] = mapped_column(String(16))  # alert | liveactivity | background
    priority: Mapped[int] = mapped_column(Integer, default=10)
    expiration: Mapped[int] = mapped_column(BigInteger, default=0)  # epoch seconds; 0: once
    collapse_id: Mapped[str | None] = mapped_column(String(64), default=None)
    payload: Mapped[dict[str, Any]] = mapped_column(JsonB)
    # pending -> sent | failed; a claimed row is pending with next_attempt_at in the future
    status: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(DateTimeUTC(timezone=True))
    last_error: Mapped[str | None] = mapped_column(Text, default=None)
    sent_at: Mapped[datetime | None] = mapped_column(DateTimeUTC(timezone=True), default=None)


# A Core table: rows are written in bulk by each process's presence loop, never loaded.
push_presence = Table(
    "push_presence",
    metadata,
    Column("owner", String(100), primary_key=True),  # the server process
    Column("user_id", GUID, primary_key=True),
    Column("thread_id", GUID, primary_key=True),
    Column("expires_at", DateTimeUTC(timezone=True), nullable=False),
)
