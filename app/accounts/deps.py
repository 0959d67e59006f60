"""Authentication: every protected handler depends on `current_user`."""

from __future__ import annotations

from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException
from sqlalchemy.ext.asyncio import AsyncSession

from app.accounts.services import user_for_token
from app.db.models import User

BEARER_SCHEME = "BearerToken"
SECURITY = [{BEARER_SCHEME: []}]


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
    user = await user_for_token(db_session, token)
    if user is None:
        raise NotAuthorizedException(
            "Invalid, expired or revoked token.", headers={"WWW-Authenticate": "Bearer"}
        )
    return user
