"""The tools every declared server offers: `tools/list`, cached per server.

A server's list is fetched at startup, again when its `refresh_seconds` have passed, and
at once when the server says the list changed (a `subscriptions/listen` stream, where
the server offers one). A server that cannot be listed has no tools until it can be: its
tools leave every toolset (one log line when it goes down, one when it comes back), and
no run fails because of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import Any

import mcp.types as mcp_types
from mcp.client.subscriptions import ListenNotSupportedError

from app.lib.background import DONE, Answer, BackgroundService, stop_all
from app.tools.base import Tool
from app.tools.mcp.connect import StatusWatch, connect, describe_failure, leaf_exceptions
from app.tools.mcp.tool import McpTool
from app.tools.mcp_config import McpServerSpec

logger = logging.getLogger("app.tools.mcp")
LIST_PAGES = 20  # a server's list is a few pages at most; a cursor that never ends stops here
RETRY_SECONDS = 30.0  # a server that is down is asked again this often
# How long shutdown waits for the background tasks to end once cancelled. The MCP client
# shields parts of its cleanup (courtesy cancels, closing its session); should one wait on
# a server that never answers, shutdown goes on without it instead of hanging.
STOP_SECONDS = 5.0


class ListingFailed(RuntimeError):
    def __init__(self, denied: int | None, reason: str) -> None:
        super().__init__(reason)
        self.denied, self.reason = denied, reason


@dataclass
class ServerTools:
    spec: McpServerSpec
    tools: dict[str, McpTool] = field(default_factory=dict)
    reachable: bool | None = None  # None: never asked
    fresh_until: float = 0.0
    listening: asyncio.Event = field(default_factory=asyncio.Event)  # list_changed heard


class McpCatalog:
    """A `ToolSource` for the registry (app/tools/runtime/registry.py) and the names each server
    offers for the toolsets (app/tools/runtime/toolsets.py)."""

    def __init__(self, servers: dict[str, McpServerSpec]) -> None:
        self.servers = {name: ServerTools(spec) for name, spec in servers.items()}
        self.generation = 0
        self.changed = asyncio.Event()  # set whenever the tools change (tests wait on it)
        self._by_name: dict[str, McpTool] = {}
        self._services: list[BackgroundService] = []

    # -- ToolSource --------------------------------------------------------------------
    def get(self, name: str) -> Tool | None:
        return self._by_name.get(name)

    def tools(self) -> list[Tool]:
        return list(self._by_name.values())

    def names_for(self, server: str) -> list[str]:
        entry = self.servers.get(server)
        return list(entry.tools) if entry is not None else []

    # -- refreshing --------------------------------------------------------------------
    def learn(self, server: str, listing: list[dict[str, Any]]) -> None:
        """A per-user server's tools, as a user's connection listed them (no credential of
        the catalog's own can list them; app/connections/services.py)."""
        entry = self.servers[server]
        tools = (McpTool(entry.spec, mcp_types.Tool.model_validate(raw)) for raw in listing)
        self._install(entry, {t.name: t for t in tools if entry.spec.allows(t.remote)})

    async def list_as_user(self, server: str, token: str) -> list[dict[str, Any]]:
        """The server's tools/list with a user's token (raises; `watch.denied` on 401/403)."""
        spec = self.servers[server].spec
        watch = StatusWatch()
        try:
            return [t.model_dump(by_alias=True, mode="json", exclude_none=True)
                    for t in await self._list_raw(spec, watch, bearer=token)]  # fmt: skip
        except Exception as exc:
            raise ListingFailed(watch.denied, describe_failure(exc)) from exc

    async def refresh(self, server: str) -> None:
        entry = self.servers[server]
        if entry.spec.per_user:
            return  # listed with a user's token when one connects (`learn`)
        watch = StatusWatch()
        try:
            listed = await self._list(entry.spec, watch)
        except Exception as exc:
            self._went_down(entry, watch, exc)
            return
        if entry.reachable is False:
            logger.info("mcp server %s is reachable again (%d tools)", server, len(listed))
        entry.reachable = True
        entry.fresh_until = asyncio.get_running_loop().time() + entry.spec.refresh_seconds
        self._install(entry, listed)

    async def refresh_all(self, wait: float | None = None) -> None:
        """Every server at once; `wait` bounds it (a slow one keeps what it had)."""
        work = [self.refresh(name) for name in self.servers]
        if not work:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait):
                await asyncio.gather(*work)

    async def _list(self, spec: McpServerSpec, watch: StatusWatch) -> dict[str, McpTool]:
        tools = (McpTool(spec, remote) for remote in await self._list_raw(spec, watch))
        return {tool.name: tool for tool in tools if spec.allows(tool.remote)}

    async def _list_raw(
        self, spec: McpServerSpec, watch: StatusWatch, bearer: str | None = None
    ) -> list[mcp_types.Tool]:
        listed: list[mcp_types.Tool] = []
        seconds = min(spec.timeout_seconds, 30)
        async with connect(spec, watch, bearer=bearer, seconds=seconds) as client:
            cursor = None
            for _ in range(LIST_PAGES):
                page = await client.list_tools(cursor=cursor, cache_mode="refresh")
                listed.extend(page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    break
        return listed

    def _went_down(self, entry: ServerTools, watch: StatusWatch, exc: BaseException) -> None:
        if entry.reachable is not False:  # logged once per outage, not per attempt
            reason = (
                f"it refused the credentials (HTTP {watch.denied})"
                if watch.denied is not None
                else describe_failure(exc)
            )
            logger.warning("mcp server %s left out of toolsets: %s", entry.spec.name, reason)
        entry.reachable = False
        loop = asyncio.get_running_loop()
        entry.fresh_until = loop.time() + min(RETRY_SECONDS, entry.spec.refresh_seconds)
        self._install(entry, {})

    def _install(self, entry: ServerTools, listed: dict[str, McpTool]) -> None:
        if _signature(entry.tools) == _signature(listed):
            return
        entry.tools = listed
        self._by_name = {n: t for e in self.servers.values() for n, t in e.tools.items()}
        self.generation += 1
        self.changed.set()

    # -- background --------------------------------------------------------------------
    def start(self) -> None:
        """Keep every server's list fresh: a TTL loop, plus a listener per server."""
        for name, entry in self.servers.items():
            if entry.spec.per_user:
                continue
            self._services += [self._keeping_fresh(name, entry), self._listening(name, entry)]
        for service in self._services:
            service.start()

    async def stop(self) -> None:
        await stop_all(self._services, label="mcp", logger=logger)
        self._services.clear()

    def _keeping_fresh(self, server: str, entry: ServerTools) -> BackgroundService:
        """Refresh the list once its `refresh_seconds` (or the retry, when down) passed
        (`refresh` itself never raises: a server down is no error of this loop)."""

        def left() -> float:
            return max(0.05, entry.fresh_until - asyncio.get_running_loop().time())

        async def refresh_when_due() -> None:
            if asyncio.get_running_loop().time() >= entry.fresh_until:
                await self.refresh(server)

        return BackgroundService(
            f"mcp-refresh:{server}",
            refresh_when_due,
            period=left,
            logger=logger,
            stop_seconds=STOP_SECONDS,
        )

    def _listening(self, server: str, entry: ServerTools) -> BackgroundService:
        """Refresh when the server says its tool list changed (2026-07-28 servers); after
        a listen ends, listen again a little later."""

        async def listen() -> Answer:
            try:
                async with (
                    connect(entry.spec, StatusWatch(), seconds=3600) as client,
                    client.listen(tools_list_changed=True) as subscription,
                ):
                    entry.listening.set()
                    async for _event in subscription:
                        await self.refresh(server)
            except Exception as exc:  # the server went away: no error of this loop
                if any(isinstance(e, ListenNotSupportedError) for e in leaf_exceptions(exc)):
                    return DONE  # an older server: the TTL alone keeps its list fresh
                logger.debug("mcp server %s: listen ended (%s)", server, describe_failure(exc))
            finally:
                entry.listening.clear()
            return None

        return BackgroundService(
            f"mcp-listen:{server}",
            listen,
            period=lambda: min(RETRY_SECONDS, entry.spec.refresh_seconds),
            immediately=True,
            logger=logger,
            stop_seconds=STOP_SECONDS,
        )


def _signature(tools: dict[str, McpTool]) -> list[tuple[str, str, str]]:
    return sorted((n, t.description, repr(t.schema)) for n, t in tools.items())
