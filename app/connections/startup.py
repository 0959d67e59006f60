"""At startup, the per-user MCP servers join the catalog: off without MCP_TOKEN_KEY (one
log line), else with their tools as each server's latest connection listed them."""

from __future__ import annotations

import logging

from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig
from sqlalchemy.ext.asyncio import async_sessionmaker

from app.connections.services import latest_listings, per_user_servers
from app.connections.vault import Vault, vault_from
from app.settings import Settings
from app.tools.mcp.catalog import McpCatalog

logger = logging.getLogger("app.tools.mcp")


class PerUserServers:
    """The McpPlugin's `on_catalog` hook for the per-user servers."""

    def __init__(self, settings: Settings, db_config: SQLAlchemyAsyncConfig) -> None:
        self.settings, self.db_config = settings, db_config

    async def __call__(self, catalog: McpCatalog) -> None:
        if not per_user_servers():
            return
        vault = vault_from(self.settings.mcp_token_key)
        if not isinstance(vault, Vault):
            why = vault or "MCP_TOKEN_KEY is not set"
            logger.warning("per-user MCP servers are off: %s", why)
            for name in per_user_servers():
                catalog.servers.pop(name, None)
            return
        sessions = async_sessionmaker(self.db_config.get_engine(), expire_on_commit=False)
        try:
            for server, listing in (await latest_listings(sessions)).items():
                catalog.learn(server, listing)
        except Exception:  # a schema behind, a database down: they join on the next connect
            logger.exception("per-user MCP servers' tools could not be read")
