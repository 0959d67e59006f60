"""An OAuth-protected MCP server and its own authorization server, both built with the
official SDK and served on real sockets: the authorization server is the SDK's
`create_auth_routes` over an in-memory provider that approves every authorization at once
(its redirect carries the code) and checks PKCE, refresh and revocation as the SDK does;
the MCP server refuses any request without one of its live tokens (RFC 9728 metadata
names the authorization server) and has a tool saying whose token it got."""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    ProviderTokenVerifier,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.routes import build_resource_metadata_url, create_auth_routes
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.tools.mcp.demo_server import RunningServer, free_socket, serve_in_thread


@dataclass
class MemoryAuthority:
    """The authorization server's state: every authorization approved at once for the
    next subject (`user-1`, `user-2`, …)."""

    access_seconds: int = 3600
    clients: dict[str, OAuthClientInformationFull] = field(default_factory=dict)
    codes: dict[str, AuthorizationCode] = field(default_factory=dict)
    access: dict[str, AccessToken] = field(default_factory=dict)
    refresh: dict[str, RefreshToken] = field(default_factory=dict)
    authorized: int = 0
    refreshed: int = 0
    revoked: list[str] = field(default_factory=list)

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        self.authorized += 1
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [], expires_at=time.time() + 300,
            client_id=client.client_id, code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri, resource=params.resource,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            subject=f"user-{self.authorized}",
        )  # fmt: skip
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code: str):
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(self, client, authorization_code) -> OAuthToken:
        del self.codes[authorization_code.code]  # single use
        return self._issue(client.client_id, authorization_code)

    async def load_refresh_token(self, client, refresh_token: str):
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token, scopes) -> OAuthToken:
        self.refreshed += 1
        del self.refresh[refresh_token.token]  # rotated
        return self._issue(client.client_id, refresh_token)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token) -> None:
        self.revoked.append(token.token)
        self.access = {k: v for k, v in self.access.items() if v.subject != token.subject}
        self.refresh = {k: v for k, v in self.refresh.items() if v.subject != token.subject}

    def _issue(self, client_id: str, grant: AuthorizationCode | RefreshToken) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        expires = int(time.time()) + self.access_seconds
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=grant.scopes, expires_at=expires,
            resource=grant.resource, subject=grant.subject,
        )  # fmt: skip
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=grant.scopes,
            resource=grant.resource, subject=grant.subject,
        )  # fmt: skip
        return OAuthToken(
            access_token=access, expires_in=self.access_seconds, refresh_token=refresh,
            scope=" ".join(grant.scopes) or None,
        )  # fmt: skip

    def expire_access_tokens(self) -> None:
        """Every access token expires now (the refresh tokens stay good)."""
        for token in self.access.values():
            token.expires_at = int(time.time()) - 1


def build_protected_server(authority: MemoryAuthority, issuer: str, url: str) -> MCPServer:
    server = MCPServer(
        "toolcells-oauth-test",
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(issuer),
            resource_server_url=AnyHttpUrl(url),
            validate_token_resource=True,
            required_scopes=["notes"],
        ),
        token_verifier=ProviderTokenVerifier(authority),  # type: ignore[arg-type]
    )

    @server.tool(structured_output=False)
    def whoami() -> str:
        """Whose token this call came with."""
        token = get_access_token()
        return f"you are {token.subject if token else 'nobody'}"

    return server


@dataclass
class OAuthWorld:
    authority: MemoryAuthority
    issuer: str
    mcp: RunningServer
    auth: RunningServer


RELOCATED_METADATA = "/meta/notes-resource"


def relocate_metadata(app: ASGIApp, base: str) -> ASGIApp:
    """The SDK's app with its protected-resource metadata moved off the well-known places
    (404 there) to RELOCATED_METADATA, which only its refusals' WWW-Authenticate names,
    as a server behind a gateway may do (RFC 9728 §5.1)."""
    hint = f'resource_metadata="{base}{RELOCATED_METADATA}"'.encode()
    inner = build_resource_metadata_url(AnyHttpUrl(f"{base}/mcp")).path or ""

    async def moved(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await app(scope, receive, send)
        if scope["path"].startswith("/.well-known/"):
            return await PlainTextResponse("Not here.", 404)(scope, receive, send)
        if scope["path"] == RELOCATED_METADATA:
            scope = {**scope, "path": inner, "raw_path": inner.encode()}

        async def send_hint(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [
                    (k, re.sub(rb'resource_metadata="[^"]*"', hint, v)) for k, v in message["headers"]
                ]}  # fmt: skip
            await send(message)

        await app(scope, receive, send_hint)

    return moved


@contextmanager
def oauth_world(relocated: bool = False) -> Iterator[OAuthWorld]:
    """With `relocated`, the MCP server's metadata is where only its refusals say."""
    authority = MemoryAuthority()
    auth_sock, mcp_sock = free_socket(), free_socket()
    issuer = f"http://127.0.0.1:{auth_sock.getsockname()[1]}"
    mcp_url = f"http://127.0.0.1:{mcp_sock.getsockname()[1]}/mcp"
    routes = create_auth_routes(
        authority,  # type: ignore[arg-type]
        AnyHttpUrl(issuer),
        client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=["notes"]),
        revocation_options=RevocationOptions(enabled=True),
    )
    auth = serve_in_thread(Starlette(routes=routes), sock=auth_sock)
    protected = build_protected_server(authority, issuer, mcp_url)
    mcp_app = protected.streamable_http_app(stateless_http=True)
    if relocated:
        mcp_app = relocate_metadata(mcp_app, mcp_url.removesuffix("/mcp"))
    mcp = serve_in_thread(mcp_app, sock=mcp_sock)
    try:
        yield OAuthWorld(authority, issuer, mcp, auth)
    finally:
        mcp.stop()
        auth.stop()
