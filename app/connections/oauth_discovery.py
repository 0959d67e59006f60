"""Where a per-user MCP server's users authorize: its RFC 9728 protected-resource metadata
(where the server's refusal of a request without a token points, `WWW-Authenticate:
Bearer resource_metadata=…`, else at the well-known places) names the authorization
server, whose RFC 8414 metadata names the endpoints; the app's client there is the
configured `oauth_client_id` or one it registers (RFC 7591).

The documents are parsed with the SDK's models (`mcp.shared.auth`) and the URLs to try
built by its helpers (`mcp.client.auth.utils`); the SDK's own `OAuthClientProvider` drives
an interactive client that waits for a redirect in-process, which a server cannot do
(the redirect reaches another request), so the flow itself is ours (app/connections/oauth.py).
Every URL but the server's own comes from a remote document: each fetch goes through the
SSRF-safe fetcher (app/tools/net), with MCP_OAUTH_ALLOW_HOSTS as its allow-list.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import urlsplit

import httpx
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    extract_resource_metadata_from_www_auth,
    extract_scope_from_www_auth,
    get_client_metadata_scopes,
    issuers_match,
)
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    ProtectedResourceMetadata,
)
from mcp.shared.auth_utils import check_resource_allowed
from mcp.types import LATEST_PROTOCOL_VERSION
from pydantic import BaseModel, ValidationError

from app.lib.net.fetch import FetchFailed, FetchPolicy, SafeFetcher
from app.lib.net.ssrf import FetchBlocked, normalize_host
from app.settings import Settings
from app.tools.mcp_config import McpServerSpec

GRANTS = ["authorization_code", "refresh_token"]
ACCEPT_JSON = {"Accept": "application/json"}
CLIENT_NAME = "Toolcells"


class OAuthUnavailable(Exception):
    """The server cannot be connected through OAuth; the message says why (safe to show)."""


@dataclass(frozen=True)
class Discovered:
    metadata: OAuthMetadata
    resource: str  # the RFC 8707 resource indicator tokens are asked for
    scope: str | None


@dataclass(frozen=True)
class OAuthClient:
    client_id: str
    client_secret: str | None
    auth_method: str  # none | client_secret_post | client_secret_basic


def oauth_fetcher(settings: Settings, *also: str) -> SafeFetcher:
    """The fetcher for OAuth documents and endpoints; `also`: hosts the operator named
    themselves (the MCP server's own)."""
    allow = {normalize_host(host) for host in (*settings.mcp_oauth_allow_hosts, *also)}
    return SafeFetcher(FetchPolicy(allow_hosts=frozenset(allow), max_bytes=256_000))


Metadata = TypeVar("Metadata", bound=BaseModel)


async def _document(fetcher: SafeFetcher, url: str) -> bytes | None:
    try:
        return (await fetcher.fetch(url, headers=ACCEPT_JSON)).body
    except (FetchFailed, FetchBlocked, ValueError):
        return None  # not served there (or not allowed): the next candidate


async def _documents(
    fetcher: SafeFetcher, candidates: Iterable[str], model: type[Metadata]
) -> AsyncIterator[Metadata]:
    """The metadata documents found at `candidates`, in order (missing or invalid: skipped)."""
    for candidate in candidates:
        body = await _document(fetcher, candidate)
        if body is None:
            continue
        try:
            found = model.model_validate_json(body)
        except ValidationError:
            continue
        yield found


@dataclass(frozen=True)
class Challenge:
    """What the MCP server's refusal of a request without a token says (RFC 9728 §5.1,
    RFC 6750 §3): where its protected-resource metadata is, and the scope to ask for."""

    resource_metadata: str | None = None
    scope: str | None = None

    @classmethod
    def parse(cls, status: int, header: str | None) -> Challenge:
        if header is None:
            return cls()
        refusal = httpx.Response(status, headers={"WWW-Authenticate": header})
        return cls(
            extract_resource_metadata_from_www_auth(refusal), extract_scope_from_www_auth(refusal)
        )


# The request a client starts with (MCP lifecycle): what the server refuses without a token.
INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": LATEST_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": CLIENT_NAME, "version": "1"},
        },
    }
).encode()
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


async def _challenge(fetcher: SafeFetcher, url: str) -> Challenge:
    """The server's answer to a request without a token: its hints, if it refused it."""
    try:
        page = await fetcher.post(url, headers=MCP_HEADERS, content=INITIALIZE)
    except (FetchFailed, FetchBlocked, ValueError):
        return Challenge()  # the well-known places are still tried
    if page.status not in (401, 403):
        return Challenge()
    return Challenge.parse(page.status, page.challenge)


async def discover(settings: Settings, spec: McpServerSpec) -> Discovered:
    own = oauth_fetcher(settings, urlsplit(spec.url).hostname or "")
    challenge = await _challenge(own, spec.url)
    resource = await _protected_resource(own, spec.url, challenge.resource_metadata)
    issuer = str(resource.authorization_servers[0])
    metadata = await _authorization_server(oauth_fetcher(settings), issuer, spec.url)
    methods = metadata.code_challenge_methods_supported
    if methods is not None and "S256" not in methods:
        raise OAuthUnavailable("its authorization server does not support PKCE (S256)")
    scope = (
        " ".join(spec.oauth_scopes)
        if spec.oauth_scopes is not None
        else get_client_metadata_scopes(challenge.scope, resource, metadata, GRANTS)
    )
    return Discovered(metadata, str(resource.resource), scope)


async def _protected_resource(
    fetcher: SafeFetcher, url: str, hint: str | None
) -> ProtectedResourceMetadata:
    """The server's metadata: where its refusal said (`hint`; on another host, only if
    MCP_OAUTH_ALLOW_HOSTS allows it), else at the RFC 9728 well-known places."""
    candidates = build_protected_resource_metadata_discovery_urls(hint, url)
    async for found in _documents(fetcher, candidates, ProtectedResourceMetadata):
        if not check_resource_allowed(url, str(found.resource)):
            raise OAuthUnavailable("its protected-resource metadata names another resource")
        return found
    raise OAuthUnavailable("it does not advertise OAuth (no protected-resource metadata)")


async def _authorization_server(fetcher: SafeFetcher, issuer: str, url: str) -> OAuthMetadata:
    candidates = build_oauth_authorization_server_metadata_discovery_urls(issuer, url)
    async for found in _documents(fetcher, candidates, OAuthMetadata):
        if not issuers_match(str(found.issuer), issuer):  # RFC 8414 §3.3
            raise OAuthUnavailable("its authorization server's metadata names another issuer")
        return found
    raise OAuthUnavailable("its authorization server's metadata cannot be read")


# (server, issuer, redirect URI) -> the client this process registered there
_registered: dict[tuple[str, str, str], OAuthClient] = {}


async def client_for(
    settings: Settings, spec: McpServerSpec, found: Discovered, redirect_uri: str
) -> OAuthClient:
    """The configured client, else one registered dynamically (once per process)."""
    if spec.oauth_client_id:
        secret = os.environ.get(spec.oauth_client_secret) if spec.oauth_client_secret else None
        return OAuthClient(spec.oauth_client_id, secret, "client_secret_post" if secret else "none")
    endpoint = found.metadata.registration_endpoint
    if endpoint is None:
        raise OAuthUnavailable(
            "its authorization server offers no client registration and no oauth_client_id "
            "is configured for it"
        )
    key = (spec.name, str(found.metadata.issuer), redirect_uri)
    if key not in _registered:
        _registered[key] = await _register(settings, str(endpoint), found, redirect_uri)
    return _registered[key]


async def _register(
    settings: Settings, endpoint: str, found: Discovered, redirect_uri: str
) -> OAuthClient:
    supported = found.metadata.token_endpoint_auth_methods_supported or []
    method = "client_secret_post" if "client_secret_post" in supported else "none"
    request = OAuthClientMetadata(
        redirect_uris=[redirect_uri],  # type: ignore[list-item]
        token_endpoint_auth_method=method,  # type: ignore[arg-type]
        grant_types=list(GRANTS),
        client_name=CLIENT_NAME,
        scope=found.scope,
        application_type="web",
    )
    body = request.model_dump_json(by_alias=True, exclude_none=True).encode()
    headers = {**ACCEPT_JSON, "Content-Type": "application/json"}
    try:
        page = await oauth_fetcher(settings).post(endpoint, headers=headers, content=body)
    except (FetchFailed, FetchBlocked, ValueError) as exc:
        raise OAuthUnavailable(f"its client registration cannot be reached ({exc})") from None
    if page.status not in (200, 201):
        raise OAuthUnavailable(
            f"its authorization server refused to register the app (HTTP {page.status})"
        )
    try:
        answer = json.loads(page.body)
        answer.pop("issuer", None)  # the SDK's own binding field, never taken from the wire
        info = OAuthClientInformationFull.model_validate(answer)
    except (ValueError, AttributeError):
        raise OAuthUnavailable("its client registration answered with no client") from None
    return OAuthClient(
        info.client_id, info.client_secret, info.token_endpoint_auth_method or method
    )
