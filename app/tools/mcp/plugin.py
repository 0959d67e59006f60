"""The MCP servers' lifespan: the bundled demo server, the catalog, its refreshing.

Hooked into the app as one plugin (app/asgi.py): it adds the catalog to the registry as a
tool source and tells the toolsets which tools each server offers now.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import msgspec
from litestar import Litestar
from litestar.config.app import AppConfig
from litestar.plugins import InitPluginProtocol

from app.settings import Settings
from app.tools.mcp.catalog import McpCatalog
from app.tools.mcp_config import McpServerSpec
from app.tools.runtime.registry import ToolRegistry
from app.tools.runtime.toolsets import (
    agent_types,
    install_mcp_tool_names,
    mcp_servers,
    uninstall_mcp_tool_names,
)

if TYPE_CHECKING:
    from app.tools.mcp.demo_server import RunningServer

logger = logging.getLogger("app.tools.mcp")
CatalogHook = Callable[[McpCatalog], Awaitable[None]]
STARTUP_WAIT_SECONDS = 5.0  # the first listing's longest wait; a slower server joins later


class McpPlugin(InitPluginProtocol):
    def __init__(
        self,
        settings: Settings,
        registry: ToolRegistry,
        *,
        on_catalog: Sequence[CatalogHook] = (),
    ) -> None:
        """`on_catalog`: run once the catalog exists, before its first listing (the
        connections domain teaches it the per-user servers' last listings there)."""
        self.settings, self.registry, self.on_catalog = settings, registry, on_catalog

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
        registry = self.registry
        registry.add_source(catalog)
        install_mcp_tool_names(catalog.names_for)
        app.state.mcp_catalog = catalog
        try:
            for hook in self.on_catalog:
                await hook(catalog)
            await catalog.refresh_all(wait=STARTUP_WAIT_SECONDS)
            catalog.start()
            yield
        finally:
            await catalog.stop()
            uninstall_mcp_tool_names(catalog.names_for)
            registry.remove_source(catalog)
            if demo is not None:
                await asyncio.to_thread(demo.stop)

    async def _servers(self) -> tuple[RunningServer | None, dict[str, McpServerSpec]]:
        """The declared servers; a bundled one gets the demo server's URL (or, with
        MCP_DEMO_SERVER off, is left out). The demo server starts only when an agent type
        lists a bundled server: otherwise no toolset would offer its tools, and every
        process would serve it for nothing."""
        servers = dict(mcp_servers())
        used = {name for config in agent_types().values() for name in config.mcp_servers}
        bundled = [name for name, spec in servers.items() if spec.bundled]
        for name in [name for name in bundled if name not in used]:
            servers.pop(name)
        bundled = [name for name in bundled if name in used]
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
