"""The token endpoint and the revocation endpoint of a per-user server's authorization
server: the code exchange (with the PKCE verifier), the refresh_token grant, revocation.

`Grant` is what the app keeps (sealed) to do these later: the client, the endpoints, the
refresh token. Answers are parsed with the SDK's `OAuthToken`; no token is ever logged or
put in an error message.
"""

from __future__ import annotations

import base64
import json
import logging
from datetime import datetime, timedelta
from urllib.parse import quote

import msgspec
from mcp.shared.auth import OAuthToken
from pydantic import ValidationError

from app.connections.oauth_discovery import ACCEPT_JSON, OAuthUnavailable, oauth_fetcher
from app.lib.net.fetch import FetchFailed
from app.lib.net.ssrf import FetchBlocked
from app.lib.time import utcnow
from app.settings import Settings

logger = logging.getLogger("app.tools.mcp")


class Grant(msgspec.Struct, kw_only=True, omit_defaults=True):
    """How the app talks to the authorization server for one user's connection."""

    client_id: str
    client_secret: str | None = None
    auth_method: str = "none"
    token_endpoint: str
    revocation_endpoint: str | None = None
    issuer: str
    iss_required: bool = False  # RFC 9207: the redirect must carry `iss`
    resource: str
    redirect_uri: str
    scope: str | None = None
    refresh_token: str | None = None


class TokenRefused(Exception):
    """The authorization server refused the code or the refresh token (`invalid_grant`…):
    the user has to authorize again."""


def _client_auth(grant: Grant, form: dict[str, str]) -> dict[str, str]:
    """Client authentication as registered: in the form, or HTTP Basic (RFC 6749 §2.3.1)."""
    if grant.client_secret and grant.auth_method == "client_secret_basic":
        pair = f"{quote(grant.client_id, safe='')}:{quote(grant.client_secret, safe='')}"
        return {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode()}
    form["client_id"] = grant.client_id
    if grant.client_secret:
        form["client_secret"] = grant.client_secret
    return {}


async def token_request(settings: Settings, grant: Grant, form: dict[str, str]) -> OAuthToken:
    form = {**form, "resource": grant.resource}
    headers = {**ACCEPT_JSON, **_client_auth(grant, form)}
    try:
        page = await oauth_fetcher(settings).post(grant.token_endpoint, form, headers)
    except (FetchFailed, FetchBlocked, ValueError) as exc:
        raise OAuthUnavailable(f"its token endpoint cannot be reached ({exc})") from None
    if page.status in (400, 401):
        raise TokenRefused(_oauth_error(page.body))
    if page.status != 200:
        raise OAuthUnavailable(f"its token endpoint answered HTTP {page.status}")
    try:
        return OAuthToken.model_validate_json(page.body)
    except ValidationError:
        raise OAuthUnavailable("its token endpoint answered with no usable token") from None


def _oauth_error(body: bytes) -> str:
    """The RFC 6749 §5.2 error code (a fixed vocabulary, safe to show), or a generic one."""
    try:
        code = json.loads(body).get("error")
    except (ValueError, AttributeError):
        code = None
    return code if isinstance(code, str) and code.isascii() and len(code) < 64 else "refused"


async def exchange_code(settings: Settings, grant: Grant, code: str, verifier: str) -> OAuthToken:
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": grant.redirect_uri,
        "code_verifier": verifier,
    }
    return await token_request(settings, grant, form)


async def refresh(settings: Settings, grant: Grant) -> OAuthToken:
    if not grant.refresh_token:
        raise TokenRefused("no refresh token")
    form = {"grant_type": "refresh_token", "refresh_token": grant.refresh_token}
    if grant.scope:
        form["scope"] = grant.scope
    return await token_request(settings, grant, form)


def expiry(token: OAuthToken, now: datetime | None = None) -> datetime | None:
    if token.expires_in is None:
        return None
    return (now or utcnow()) + timedelta(seconds=token.expires_in)


async def revoke(settings: Settings, grant: Grant, access_token: str | None) -> None:
    """Best effort (RFC 7009): the refresh token (which ends the grant), then the access
    token. The connection is forgotten whatever the server answers."""
    if grant.revocation_endpoint is None:
        return
    for token, hint in ((grant.refresh_token, "refresh_token"), (access_token, "access_token")):
        if not token:
            continue
        form = {"token": token, "token_type_hint": hint}
        headers = _client_auth(grant, form)
        try:
            page = await oauth_fetcher(settings).post(grant.revocation_endpoint, form, headers)
        except (FetchFailed, FetchBlocked, ValueError) as exc:
            logger.warning("mcp oauth: revocation at %s failed: %s", grant.issuer, exc)
            return
        if page.status != 200:
            logger.warning("mcp oauth: revocation at %s answered %d", grant.issuer, page.status)
