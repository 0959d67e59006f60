"""Authentication: every protected handler depends on `current_user`."""

from __future__ import annotations

from litestar import Controller
from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException
from sqlalchemy.ext.asyncio import AsyncSession

from app.accounts.services import user_and_expiry_for_token
from app.accounts.token_cache import TokenCache
from app.db.models import User
from app.lib.requests import ApiRequest
from app.lib.security import token_digest

BEARER_SCHEME = "BearerToken"
SECURITY = [{BEARER_SCHEME: []}]


class SignedInController(Controller):
    """A controller whose every route is the signed-in user's: the OpenAPI document asks
    for the bearer token (a route open to all says `security=[]`)."""

    security = SECURITY


def bearer_token(connection: ASGIConnection) -> str | None:
    """The token from `Authorization: Bearer …`, or `?token=` (websockets only)."""
    header = connection.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    if connection.scope["type"] == "websocket":
        return connection.query_params.get("token") or None
    return None


async def provide_current_user(request: ASGIConnection, db_session: AsyncSession) -> User:
    token = bearer_token(request)
    if not token or len(token) > 200:
        raise NotAuthorizedException(
            "Missing or malformed bearer token.", headers={"WWW-Authenticate": "Bearer"}
        )
    user = await _user_for(request, db_session, token)
    if isinstance(request, ApiRequest):
        request.check_body_types()  # the token was good: now the body's JSON types
    return user


async def _user_for(request: ASGIConnection, db_session: AsyncSession, token: str) -> User:
    digest = token_digest(token)
    cache: TokenCache | None = request.app.state.get("token_cache")
    if cache is not None and (user := cache.get(digest)) is not None:
        return user
    found = await user_and_expiry_for_token(db_session, digest)
    if found is None:
        raise NotAuthorizedException(
            "Invalid, expired or revoked token.", headers={"WWW-Authenticate": "Bearer"}
        )
    user, expires_at = found
    if cache is not None:
        cache.put(digest, user, expires_at)
    return user
