"""The MCP servers' lifespan: the bundled demo server, the catalog, its refreshing.

Hooked into the app as one plugin (app/asgi.py): it adds the catalog to the registry as a
tool source and tells the toolsets which tools each server offers now.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import msgspec
from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig
from litestar import Litestar
from litestar.config.app import AppConfig
from litestar.plugins import InitPluginProtocol
from sqlalchemy.ext.asyncio import async_sessionmaker

from app.connections.vault import Vault
from app.settings import Settings
from app.tools.mcp.catalog import McpCatalog
from app.tools.mcp_config import McpServerSpec
from app.tools.runtime.registry import get_registry
from app.tools.runtime.toolsets import install_mcp_tool_names, mcp_servers, uninstall_mcp_tool_names

if TYPE_CHECKING:
    from app.tools.mcp.demo_server import RunningServer

logger = logging.getLogger("app.tools.mcp")
STARTUP_WAIT_SECONDS = 5.0  # the first listing's longest wait; a slower server joins later


class McpPlugin(InitPluginProtocol):
    def __init__(self, settings: Settings, db_config: SQLAlchemyAsyncConfig) -> None:
        self.settings, self.db_config = settings, db_config

    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        if mcp_servers():
            app_config.lifespan.append(self._lifespan)
        return app_config

    @asynccontextmanager
    async def _lifespan(self, app: Litestar) -> AsyncIterator[None]:
        # The HTTP client logs every request at INFO: one line per MCP call is noise.
        logging.getLogger("httpx2").setLevel(logging.WARNING)
        demo, servers = await self._servers()
        catalog = McpCatalog(servers)
        registry = get_registry()
        registry.add_source(catalog)
        install_mcp_tool_names(catalog.names_for)
        app.state.mcp_catalog = catalog
        try:
            await self._per_user(catalog)
            await catalog.refresh_all(wait=STARTUP_WAIT_SECONDS)
            catalog.start()
            yield
        finally:
            await catalog.stop()
            uninstall_mcp_tool_names(catalog.names_for)
            registry.remove_source(catalog)
            if demo is not None:
                await asyncio.to_thread(demo.stop)

    async def _per_user(self, catalog: McpCatalog) -> None:
        """Per-user servers: off without MCP_TOKEN_KEY (one line), else their tools as the
        latest connection listed them."""
        from app.connections.services import latest_listings, per_user_servers
        from app.connections.vault import vault_from

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

    async def _servers(self) -> tuple[RunningServer | None, dict[str, McpServerSpec]]:
        """The declared servers; a bundled one gets the demo server's URL (or, with
        MCP_DEMO_SERVER off, is left out)."""
        servers = dict(mcp_servers())
        bundled = [name for name, spec in servers.items() if spec.bundled]
        if not bundled:
            return None, servers
        if not self.settings.mcp_demo_server:
            for name in bundled:
                servers.pop(name)
            return None, servers
        from app.tools.mcp.demo_server import build_demo_server, serve_in_thread, streamable_app

        try:
            demo = await asyncio.to_thread(serve_in_thread, streamable_app(build_demo_server()))
        except Exception:
            logger.exception("the demo MCP server did not start; its tools are left out")
            for name in bundled:
                servers.pop(name)
            return None, servers
        for name in bundled:
            servers[name] = msgspec.structs.replace(servers[name], url=demo.url)
        return demo, servers
