"""/api/mcp/servers: a user's own connections to per-user MCP servers.

The token is checked against the server (its tools/list), stored encrypted and never
served back; every operation acts on the current user's connections only.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec
from litestar import Controller, Request, delete, get, put
from sqlalchemy.ext.asyncio import AsyncSession

from app.accounts.deps import SECURITY
from app.db.models import User
from app.lib.problems import problems
from app.lib.schema import Input, Schema
from app.settings import Settings
from app.tools.mcp import connections

ServerName = Annotated[str, msgspec.Meta(pattern=r"^[a-zA-Z0-9-]{1,24}$")]
Token = Annotated[str, msgspec.Meta(min_length=1, max_length=4096, pattern=r"^[\x21-\x7e]+$")]


class McpConnectionCreate(Input, kw_only=True):
    token: Token  # e.g. a personal access token; sent as `Authorization: Bearer <token>`


class McpServerRead(Schema):
    name: str
    description: str
    connected: bool
    connected_at: datetime | None = None
    tools: list[str] = []  # the namespaced tools it adds to your agents' toolsets


class McpServerList(Schema):
    items: list[McpServerRead]
    enabled: bool  # false: MCP_TOKEN_KEY is unset, nothing can be connected


def _read(name: str, request: Request, connected_at: datetime | None) -> McpServerRead:
    spec = connections.per_user_servers()[name]
    catalog = getattr(request.app.state, "mcp_catalog", None)
    return McpServerRead(
        name=name,
        description=spec.description,
        connected=connected_at is not None,
        connected_at=connected_at,
        tools=catalog.names_for(name) if catalog is not None else [],
    )


class McpServerController(Controller):
    path = "/api/mcp/servers"
    tags = ["mcp"]
    security = SECURITY

    @get("/", operation_id="ListMcpServers", responses=problems())
    async def list_servers(
        self, request: Request, db_session: AsyncSession, current_user: User, settings: Settings
    ) -> McpServerList:
        """The per-user MCP servers and whether you have connected each."""
        mine = await connections.connections_of(db_session, current_user.id)
        return McpServerList(
            items=[_read(n, request, mine.get(n)) for n in connections.per_user_servers()],
            enabled=connections.vault_or_none(settings.mcp_token_key) is not None,
        )

    @put(
        "/{server:str}/connection",
        operation_id="ConnectMcpServer",
        responses=problems(404, 422, 503),
    )
    async def connect_server(
        self,
        server: ServerName,
        data: McpConnectionCreate,
        request: Request,
        db_session: AsyncSession,
        current_user: User,
        settings: Settings,
    ) -> McpServerRead:
        """Connect a per-user MCP server with your token (checked against the server,
        stored encrypted, never returned); connecting again replaces it."""
        at = await connections.connect_server(
            db_session,
            current_user.id,
            server,
            data.token,
            connections.vault_or_none(settings.mcp_token_key),
            getattr(request.app.state, "mcp_catalog", None),
        )
        return _read(server, request, at)

    @delete("/{server:str}/connection", operation_id="DisconnectMcpServer", responses=problems(404))
    async def disconnect_server(
        self, server: ServerName, db_session: AsyncSession, current_user: User
    ) -> None:
        """Revoke your connection: its token is deleted; your runs stop using the server."""
        await connections.disconnect_server(db_session, current_user.id, server)
