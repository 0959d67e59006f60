"""The per-user credentials a per-user MCP server's call needs: a port, not a vault.

The MCP integration asks "this user's token for this server"; the connections domain
(app/connections/) answers it from its encrypted store, refreshing OAuth tokens, and plugs
its answer in at startup. Without one, per-user servers are off (the tool says so).
"""

from __future__ import annotations

from typing import Protocol

from app.settings import Settings
from app.tools.base import ToolContext

OFF = "Per-user MCP servers are off on this server (MCP_TOKEN_KEY is not set)."


class UserCredentials(Protocol):
    def off_reason(self, settings: Settings) -> str | None:
        """Why per-user servers cannot be used now (no key), or None."""
        ...

    async def token(self, ctx: ToolContext, server: str, *, refused: bool = False) -> str | None:
        """The token of the run's user (`ctx.user`) for `server` (refreshed first when due, or when the server
        `refused` the last one); None: not connected, or it needs reconnecting."""
        ...


class _NoCredentials:
    def off_reason(self, settings: Settings) -> str | None:
        return OFF

    async def token(self, ctx: ToolContext, server: str, *, refused: bool = False) -> str | None:
        return None


class CredentialsSlot:
    """The process's provider of per-user credentials (one; the last plugged in wins)."""

    def __init__(self) -> None:
        self.provider: UserCredentials = _NoCredentials()

    def plug(self, provider: UserCredentials) -> None:
        self.provider = provider

    def unplug(self) -> None:
        self.provider = _NoCredentials()


CREDENTIALS = CredentialsSlot()
