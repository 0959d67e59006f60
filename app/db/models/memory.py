from __future__ import annotations

from uuid import UUID

from sqlalchemy import ForeignKey, Index, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, JsonB

SEARCH_DOCUMENT = (
    "to_tsvector('english'::regconfig, "
    "(COALESCE(key, ''::character varying)::text || ' '::text) || content)"
)


class Memory(Base):
    __tablename__ = "memories"
    # Full-text search (migration 0002_memory_search): a GIN index on PostgreSQL; SQLite
    # keeps an FTS5 table in step by triggers instead (see app/memories/services.py).
    __table_args__ = (
        Index(
            "ix_memories_search",
            # Written as PostgreSQL prints it back, so `alembic check` sees no drift.
            text(SEARCH_DOCUMENT),
            postgresql_using="gin",
        ).ddl_if(dialect="postgresql"),
    )

    owner_id: Mapped[UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    agent_id: Mapped[UUID | None] = mapped_column(
        ForeignKey("agents.id", ondelete="SET NULL"), default=None
    )
    key: Mapped[str | None] = mapped_column(String(200), default=None)
    content: Mapped[str] = mapped_column(Text)
    tags: Mapped[list[str] | None] = mapped_column(JsonB, default=None)
