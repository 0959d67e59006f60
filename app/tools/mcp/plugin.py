"""The MCP servers' lifespan: the bundled demo server, the catalog, its refreshing.

Hooked into the app as one plugin (app/asgi.py): it adds the catalog to the registry as a
tool source and tells the toolsets which tools each server offers now.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec
from litestar import Litestar
from litestar.config.app import AppConfig
from litestar.plugins import InitPluginProtocol

from app.settings import Settings
from app.tools.mcp.catalog import McpCatalog
from app.tools.mcp.config import McpServerSpec
from app.tools.registry import get_registry
from app.tools.toolsets import install_mcp_tool_names, mcp_servers

logger = logging.getLogger("app.tools.mcp")
STARTUP_WAIT_SECONDS = 5.0  # the first listing's longest wait; a slower server joins later


def mcp_result_components() -> dict[str, Any]:
    """The OpenAPI component of every MCP tool's `data` (its `result_schemas` point here)."""
    from app.lib.struct_schema import struct_components
    from app.tools.mcp.tool import McpToolResult

    return struct_components([McpToolResult])


class McpPlugin(InitPluginProtocol):
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

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
            await catalog.refresh_all(wait=STARTUP_WAIT_SECONDS)
            catalog.start()
            yield
        finally:
            await catalog.stop()
            install_mcp_tool_names(None)
            registry.remove_source(catalog)
            if demo is not None:
                await asyncio.to_thread(demo.stop)

    async def _servers(self) -> tuple[object | None, dict[str, McpServerSpec]]:
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
