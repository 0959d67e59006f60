from __future__ import annotations

from uuid import UUID

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base


class Attachment(Base):
    """A file a user uploaded (or a tool made), stored under keys derived from its id
    (app/attachments/storage.py); `message_id` is set once a message references it."""

    __tablename__ = "attachments"
    __table_args__ = (Index("ix_attachments_owner_message", "owner_id", "message_id"),)

    owner_id: Mapped[UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    # Deleting the message (or its thread) deletes the row; the stored objects go with
    # it through app/attachments/lifecycle.py (and the orphan sweep for what a crash left).
    message_id: Mapped[UUID | None] = mapped_column(
        ForeignKey("thread_messages.id", ondelete="CASCADE"), default=None, index=True
    )
    kind: Mapped[str] = mapped_column(String(16))  # image | document
    content_type: Mapped[str] = mapped_column(String(64))  # as served (sniffed, converted)
    source_type: Mapped[str] = mapped_column(String(64))  # as uploaded (sniffed)
    filename: Mapped[str] = mapped_column(String(255))
    size_bytes: Mapped[int] = mapped_column(BigInteger)  # the served file's
    stored_bytes: Mapped[int] = mapped_column(BigInteger)  # every object of it (quota)
    width: Mapped[int | None] = mapped_column(Integer, default=None)
    height: Mapped[int | None] = mapped_column(Integer, default=None)
    page_count: Mapped[int | None] = mapped_column(Integer, default=None)
    blurhash: Mapped[str | None] = mapped_column(String(64), default=None)
    # A document's text as the model reads it (capped when extracted).
    text: Mapped[str | None] = mapped_column(Text, default=None)
