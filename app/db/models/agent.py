from __future__ import annotations

from uuid import UUID

from sqlalchemy import Boolean, ForeignKey, String, Text, UniqueConstraint, true
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, JsonB


class Agent(Base):
    __tablename__ = "agents"
    __table_args__ = (UniqueConstraint("owner_id", "name", name="uq_agents_owner_name"),)

    owner_id: Mapped[UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    agent_type: Mapped[str] = mapped_column(String(50))
    model: Mapped[str | None] = mapped_column(String(200), default=None)
    system_prompt: Mapped[str | None] = mapped_column(Text, default=None)
    reflection_prompt: Mapped[str | None] = mapped_column(Text, default=None)
    memory_reflection_prompt: Mapped[str | None] = mapped_column(Text, default=None)
    # None means "everything the agent type offers"; a list narrows it.
    enabled_tools: Mapped[list[str] | None] = mapped_column(JsonB, default=None)
    # What the agent is (one line), and what tells a delegating agent when to ask it.
    description: Mapped[str | None] = mapped_column(String(500), default=None)
    tool_description: Mapped[str | None] = mapped_column(Text, default=None)
    # A specialist that is not enabled is not offered to delegating agents.
    enabled: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    # Staff can share an agent with every user (read-only for them).
    is_shared: Mapped[bool] = mapped_column(Boolean, default=False)
