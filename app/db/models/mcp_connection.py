"""A user's own connection to a per-user MCP server: the token, encrypted (app/tools/mcp/vault.py)."""

from __future__ import annotations

from uuid import UUID

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, JsonB


class McpConnection(Base):
    __tablename__ = "mcp_connections"
    __table_args__ = (Index("uq_mcp_connections_user_server", "user_id", "server", unique=True),)

    user_id: Mapped[UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    server: Mapped[str] = mapped_column(String(24))  # its name in the agent-types file
    # Fernet token of the credential (MCP_TOKEN_KEY); never served, never logged.
    token_ciphertext: Mapped[str] = mapped_column(Text)
    # The server's tools/list as this connection saw it (tool metadata, no user data): the
    # per-user server's tools are known again after a restart, before anyone reconnects.
    tools: Mapped[list[dict]] = mapped_column(JsonB, default=list)
