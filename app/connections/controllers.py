"""/api/mcp/servers: a user's own connections to per-user MCP servers.

The token is checked against the server (its tools/list), stored encrypted and never
served back; every operation acts on the current user's connections only.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec
from litestar import Controller, MediaType, Request, Response, delete, get, post, put
from litestar.params import QueryParameter
from litestar.response import Redirect
from sqlalchemy.ext.asyncio import AsyncSession

from app.accounts.deps import SignedInController
from app.connections import oauth
from app.connections import services as connections
from app.db.models import User
from app.lib.problems import ProblemException, problems
from app.lib.schema import Input, Schema
from app.settings import Settings

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


class McpOAuthStart(Schema):
    # Open it in ASWebAuthenticationSession; the server's sign-in ends at the callback.
    authorization_url: str
    expires_at: datetime  # the authorization must come back before this


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


class McpServerController(SignedInController):
    path = "/api/mcp/servers"
    tags = ["mcp"]

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
        self, server: ServerName, db_session: AsyncSession, current_user: User, settings: Settings
    ) -> None:
        """Revoke your connection: its token is deleted (an OAuth connection's tokens are
        revoked at the authorization server first); your runs stop using the server."""
        await oauth.disconnect_server(db_session, current_user.id, server, settings)

    @post(
        "/{server:str}/oauth/start",
        operation_id="StartMcpServerOAuth",
        status_code=200,
        responses=problems(404, 409, 503),
    )
    async def start_oauth(
        self,
        server: ServerName,
        request: Request,
        db_session: AsyncSession,
        current_user: User,
        settings: Settings,
    ) -> McpOAuthStart:
        """Start connecting a per-user server through OAuth 2.1 (authorization code +
        PKCE), where it advertises it: open `authorization_url` in the browser; the
        authorization server sends it back to `GET /api/mcp/oauth/callback`, which
        connects the server for you. 409: the server does not offer OAuth."""
        spec = connections.server_spec(server)
        vault = connections.vault_or_none(settings.mcp_token_key)
        if vault is None:
            raise ProblemException(503, connections.OFF)
        redirect_uri = settings.mcp_oauth_redirect_url or (
            str(request.base_url).rstrip("/") + CALLBACK_PATH
        )
        url, expires = await oauth.start(
            db_session, current_user.id, spec, settings, vault, redirect_uri
        )
        return McpOAuthStart(authorization_url=url, expires_at=expires)


CALLBACK_PATH = "/api/mcp/oauth/callback"
DONE_PAGE = "<!doctype html><title>Connected</title><p>{server} is connected. You can close this window.</p>"


class McpOAuthCallbackController(Controller):
    path = CALLBACK_PATH
    tags = ["mcp"]

    @get(
        "/",
        operation_id="FinishMcpServerOAuth",
        security=[],
        responses=problems(400, 404, 503),
        media_type=MediaType.HTML,
    )
    async def callback(
        self,
        request: Request,
        db_session: AsyncSession,
        settings: Settings,
        oauth_state: Annotated[str, QueryParameter(name="state", min_length=1, max_length=512)],
        code: Annotated[str | None, msgspec.Meta(max_length=4096)] = None,
        iss: Annotated[str | None, msgspec.Meta(max_length=2048)] = None,
        error: Annotated[str | None, msgspec.Meta(max_length=256)] = None,
    ) -> Response:
        """The redirect URI of the OAuth flow (no bearer token: the `state` binds it to the
        user who started it, once, for ten minutes). Exchanges the code, checks the token
        on the server and stores it encrypted; then redirects to MCP_OAUTH_RETURN_URL
        (`?server=…&status=connected|failed&error=…`) or shows a short page."""
        vault = connections.vault_or_none(settings.mcp_token_key)
        if vault is None:  # nothing can have been started: no state is known
            raise ProblemException(404, f"This authorization is unknown. {connections.OFF}")
        user_id, server, pending = await oauth.take_pending(db_session, oauth_state, vault)
        await db_session.commit()  # the state is spent whatever happens next
        try:
            catalog = getattr(request.app.state, "mcp_catalog", None)
            answer = oauth.Redirected(code=code, iss=iss, error=error)
            await oauth.finish(
                db_session, settings, vault, catalog, (user_id, server), pending, answer
            )
            await db_session.commit()
        except ProblemException as problem:
            back = oauth.finished_redirect(settings, server, str(problem.detail))
            if back is None:
                raise
            return Redirect(back, status_code=303)
        back = oauth.finished_redirect(settings, server, None)
        if back is not None:
            return Redirect(back, status_code=303)
        return Response(DONE_PAGE.format(server=server), media_type=MediaType.HTML)
