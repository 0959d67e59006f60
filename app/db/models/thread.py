from __future__ import annotations

from datetime import datetime
from uuid import UUID

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import GUID, Base, DateTimeUTC


class Thread(Base):
    __tablename__ = "threads"
    __table_args__ = (Index("ix_threads_owner_activity", "owner_id", "last_activity_at", "id"),)

    owner_id: Mapped[UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    agent_id: Mapped[UUID] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"), index=True)
    title: Mapped[str | None] = mapped_column(String(200), default=None)
    # Thread-wide change counter: every message write bumps it and stamps the row's seq.
    last_seq: Mapped[int] = mapped_column(BigInteger, default=0)
    # Number of messages ever created; the next message's position is this plus one.
    message_count: Mapped[int] = mapped_column(Integer, default=0)
    last_activity_at: Mapped[datetime] = mapped_column(DateTimeUTC(timezone=True))
    # The tip of the branch the thread shows and the model reads (messages form a tree by
    # `parent_id`); a new message is written below it and becomes it. Not a foreign key:
    # messages reference their thread, and a cycle would make inserts order-dependent.
    current_leaf_id: Mapped[UUID | None] = mapped_column(GUID, default=None)
