"""OAuth 2.1 authorization code + PKCE for per-user MCP servers, run by the server.

    start (POST …/oauth/start)      discovery, the app's client, PKCE, a `state` row
      -> the app opens the authorization URL (ASWebAuthenticationSession)
    callback (GET /api/mcp/oauth/callback?code&state)   the row, found by the state's
      digest, deleted as it is read (single use, expiring), binds the code to its user;
      the code is exchanged, the token checked on the server and stored sealed
    a call (oauth_refresh.bearer)  an expired access token is refreshed first

The state is 256 random bits and only its SHA-256 is stored; the verifier, the client
secret and the tokens are sealed with MCP_TOKEN_KEY. Nothing here logs a secret.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta
from urllib.parse import urlencode
from uuid import UUID

import msgspec
from mcp.client.auth import PKCEParameters
from mcp.client.auth.utils import issuers_match
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.connections import oauth_tokens
from app.connections.oauth_discovery import (
    Discovered,
    OAuthClient,
    OAuthUnavailable,
    client_for,
    discover,
)
from app.connections.oauth_tokens import Grant, TokenRefused
from app.connections.services import OFF, server_spec, store, vault_or_none
from app.connections.vault import Vault
from app.db.models import McpConnection, McpOAuthState
from app.lib.problems import ProblemException
from app.lib.time import utcnow
from app.settings import Settings
from app.tools.mcp.catalog import McpCatalog
from app.tools.mcp_config import McpServerSpec

STATE_TTL_SECONDS = 600  # time to sign in at the authorization server


class Pending(msgspec.Struct, kw_only=True):
    grant: Grant
    verifier: str


def digest(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


async def start(
    session: AsyncSession,
    user_id: UUID,
    spec: McpServerSpec,
    settings: Settings,
    vault: Vault,
    redirect_uri: str,
) -> tuple[str, datetime]:
    """The authorization URL for the user to open, and when it stops being accepted."""
    try:
        found = await discover(settings, spec)
        client = await client_for(settings, spec, found, redirect_uri)
    except OAuthUnavailable as why:
        raise ProblemException(409, f"{spec.name} cannot be connected with OAuth: {why}.") from None
    pkce = PKCEParameters.generate()
    state, now = secrets.token_urlsafe(32), utcnow()
    expires = now + timedelta(seconds=STATE_TTL_SECONDS)
    pending = Pending(grant=_grant(client, found, redirect_uri), verifier=pkce.code_verifier)
    await session.execute(delete(McpOAuthState).where(McpOAuthState.expires_at < now))
    session.add(
        McpOAuthState(
            state_digest=digest(state),
            user_id=user_id,
            server=spec.name,
            pending_ciphertext=vault.seal(msgspec.json.encode(pending).decode()),
            expires_at=expires,
        )
    )
    query = {
        "response_type": "code",
        "client_id": client.client_id,
        "redirect_uri": redirect_uri,
        "state": state,
        "code_challenge": pkce.code_challenge,
        "code_challenge_method": "S256",
        "resource": found.resource,
    }
    if found.scope:
        query["scope"] = found.scope
    endpoint = str(found.metadata.authorization_endpoint)
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(query)}", expires


def _grant(client: OAuthClient, found: Discovered, redirect_uri: str) -> Grant:
    meta = found.metadata
    return Grant(
        client_id=client.client_id,
        client_secret=client.client_secret,
        auth_method=client.auth_method,
        token_endpoint=str(meta.token_endpoint),
        revocation_endpoint=str(meta.revocation_endpoint) if meta.revocation_endpoint else None,
        issuer=str(meta.issuer),
        iss_required=bool(meta.authorization_response_iss_parameter_supported),
        resource=found.resource,
        redirect_uri=redirect_uri,
        scope=found.scope,
    )


async def take_pending(
    session: AsyncSession, state: str, vault: Vault
) -> tuple[UUID, str, Pending | None]:
    """The authorization `state` names, deleted as it is read: (user, server, pending;
    None once expired)."""
    row = (
        await session.execute(
            delete(McpOAuthState)
            .where(McpOAuthState.state_digest == digest(state))
            .returning(
                McpOAuthState.user_id,
                McpOAuthState.server,
                McpOAuthState.pending_ciphertext,
                McpOAuthState.expires_at,
            )
        )
    ).first()
    if row is None:
        raise ProblemException(404, "This authorization is unknown or was already used.")
    user_id, server, sealed, expires = row
    opened = vault.open(sealed)
    if expires <= utcnow() or opened is None:
        return user_id, server, None
    return user_id, server, msgspec.json.decode(opened, type=Pending)


class Redirected(msgspec.Struct, kw_only=True):
    """What the authorization server's redirect brought besides the state."""

    code: str | None = None
    iss: str | None = None
    error: str | None = None


def check_issuer(grant: Grant, iss: str | None) -> None:
    """RFC 9207: a redirect naming another issuer is a mix-up attack."""
    wrong = iss is not None and not issuers_match(iss, grant.issuer)
    if wrong or (iss is None and grant.iss_required):
        raise ProblemException(400, "The authorization came back from the wrong server.")


async def finish(
    session: AsyncSession,
    settings: Settings,
    vault: Vault,
    catalog: McpCatalog | None,
    owner: tuple[UUID, str],
    pending: Pending | None,
    answer: Redirected,
) -> None:
    """The code exchanged and the connection stored for `owner` (user, server); raises
    the problem that says why not."""
    if pending is None:
        raise ProblemException(400, "This authorization has expired; start again.")
    if answer.error is not None:
        raise ProblemException(400, f"The authorization was not given ({answer.error[:64]}).")
    if answer.code is None:
        raise ProblemException(400, "The redirect carries no code.")
    check_issuer(pending.grant, answer.iss)
    token, grant, expires = await exchange(settings, pending, answer.code)
    if catalog is None:
        raise ProblemException(503, OFF)
    sealed = msgspec.json.encode(grant).decode()
    await store(session, *owner, token, vault, catalog, (sealed, expires))


async def exchange(
    settings: Settings, pending: Pending, code: str
) -> tuple[str, Grant, datetime | None]:
    """(access token, the grant with its refresh token, when the access token expires)."""
    try:
        token = await oauth_tokens.exchange_code(settings, pending.grant, code, pending.verifier)
    except TokenRefused as refused:
        raise ProblemException(
            400, f"The authorization server refused the code ({refused})."
        ) from None
    except OAuthUnavailable as why:
        raise ProblemException(503, f"The code could not be exchanged: {why}.") from None
    grant = msgspec.structs.replace(pending.grant, refresh_token=token.refresh_token)
    return token.access_token, grant, oauth_tokens.expiry(token)


async def revoke(settings: Settings, row: McpConnection, vault: Vault | None) -> None:
    """Revoke an OAuth connection's tokens at its authorization server (best effort)."""
    if row.oauth_ciphertext is None or vault is None:
        return
    sealed = vault.open(row.oauth_ciphertext)
    if sealed is not None:
        grant = msgspec.json.decode(sealed, type=Grant)
        await oauth_tokens.revoke(settings, grant, vault.open(row.token_ciphertext))


def finished_redirect(settings: Settings, server: str, error: str | None) -> str | None:
    """Where the browser goes when the callback is done (the app's callback URL), or None."""
    if not settings.mcp_oauth_return_url:
        return None
    query = {"server": server, "status": "failed" if error else "connected"}
    if error:
        query["error"] = error
    separator = "&" if "?" in settings.mcp_oauth_return_url else "?"
    return f"{settings.mcp_oauth_return_url}{separator}{urlencode(query)}"


async def disconnect_server(
    session: AsyncSession, user_id: UUID, name: str, settings: Settings
) -> None:
    """Forget the connection; an OAuth one's tokens are revoked at its server first."""
    server_spec(name)
    query = select(McpConnection).where(
        McpConnection.user_id == user_id, McpConnection.server == name
    )
    row = (await session.execute(query)).scalar_one_or_none()
    if row is None:
        raise ProblemException(404, f"You have not connected {name}.")
    await revoke(settings, row, vault_or_none(settings.mcp_token_key))
    await session.delete(row)
    await session.flush()
