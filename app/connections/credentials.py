"""Per-user credentials for the MCP integration: each run's user's own token, from the
encrypted store (refreshed when due). Plugged into `app.tools.mcp.credentials` by create_app."""

from __future__ import annotations

from app.connections.oauth_refresh import bearer
from app.connections.services import OFF, vault_or_none
from app.settings import Settings
from app.tools.base import ToolContext


class VaultCredentials:
    def off_reason(self, settings: Settings) -> str | None:
        return OFF if vault_or_none(settings.mcp_token_key) is None else None

    async def token(self, ctx: ToolContext, server: str, *, refused: bool = False) -> str | None:
        vault = vault_or_none(ctx.settings.mcp_token_key)
        if vault is None:
            return None
        return await bearer(
            ctx.session_factory, ctx.settings, ctx.user.id, server, vault, refused=refused
        )
