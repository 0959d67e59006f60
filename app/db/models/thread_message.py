from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import BigInteger, Boolean, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import GUID, Base, JsonB


class ThreadMessage(Base):
    """One chat row. Written only through ``app.threads.writer``."""

    __tablename__ = "thread_messages"
    __table_args__ = (
        Index("uq_thread_messages_position", "thread_id", "position", unique=True),
        Index("uq_thread_messages_seq", "thread_id", "seq", unique=True),
        Index("uq_thread_messages_client_id", "thread_id", "client_message_id", unique=True),
        # A message's children (its replies, its edited versions): siblings and deletes.
        Index("ix_thread_messages_parent", "thread_id", "parent_id"),
    )

    thread_id: Mapped[UUID] = mapped_column(ForeignKey("threads.id", ondelete="CASCADE"))
    # Not a foreign key: runs reference their trigger message, and a cycle would make
    # inserts order-dependent. Runs are never deleted on their own.
    run_id: Mapped[UUID | None] = mapped_column(GUID, default=None, index=True)
    position: Mapped[int] = mapped_column(Integer)
    # The message this one follows on its branch (None: the thread's first). Siblings
    # (children of one parent) are versions: an edited question, a regenerated answer.
    parent_id: Mapped[UUID | None] = mapped_column(GUID, default=None)
    # Every version beside this one, itself included (ids as text, in creation order), or
    # None: the only one. Kept on the row so that a version added or deleted is a change
    # of each sibling (a new seq, a frame), and reads need no second query.
    sibling_ids: Mapped[list[str] | None] = mapped_column(JsonB, default=None)
    seq: Mapped[int] = mapped_column(BigInteger)
    role: Mapped[str] = mapped_column(String(16))
    content: Mapped[str | None] = mapped_column(Text, default=None)
    is_user_facing: Mapped[bool] = mapped_column(Boolean, default=True)
    client_message_id: Mapped[str | None] = mapped_column(String(100), default=None)
    tool_activity: Mapped[dict[str, Any] | None] = mapped_column(JsonB, default=None)
    # Model-facing data to rebuild history: an assistant turn's tool calls in OpenAI
    # format, and the id of the call a tool message answers.
    tool_calls: Mapped[list[dict[str, Any]] | None] = mapped_column(JsonB, default=None)
    tool_call_id: Mapped[str | None] = mapped_column(String(100), default=None)
    # A planner run's plan cell (app/threads/plan.py); null on every other message.
    plan: Mapped[dict[str, Any] | None] = mapped_column(JsonB, default=None)
    # The attachments a user message references, as the app shows them (app/attachments):
    # kept on the row so every read and frame carries them without a join.
    attachments: Mapped[list[dict[str, Any]] | None] = mapped_column(JsonB, default=None)
