"""A user's own connection to a per-user MCP server: the token, encrypted (app/connections/vault.py),
and the pending OAuth authorizations that lead to one."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, DateTimeUTC, JsonB


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
    # OAuth connections: the sealed grant (refresh token, client, endpoints), and when the
    # access token expires (None: a plain token, or one that does not expire).
    oauth_ciphertext: Mapped[str | None] = mapped_column(Text, default=None)
    expires_at: Mapped[datetime | None] = mapped_column(DateTimeUTC(timezone=True), default=None)
    # Until when a process refreshes the access token (database clock): the others wait for
    # its token rather than spend the same refresh token twice (app/connections/oauth_refresh.py).
    refresh_claimed_until: Mapped[datetime | None] = mapped_column(
        DateTimeUTC(timezone=True), default=None
    )


class McpOAuthState(Base):
    """An authorization a user started and has not finished: found by the hash of its
    `state` (the secret the redirect brings back), used once, expiring."""

    __tablename__ = "mcp_oauth_states"

    state_digest: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    server: Mapped[str] = mapped_column(String(24))
    # Sealed: the PKCE verifier, the client and the endpoints the code is exchanged at.
    pending_ciphertext: Mapped[str] = mapped_column(Text)
    expires_at: Mapped[datetime] = mapped_column(DateTimeUTC(timezone=True))
