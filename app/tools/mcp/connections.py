"""Users' own connections to per-user MCP servers: connect with a token, list, revoke.

Every query is scoped to the current user: a connection is only ever read for its owner's
requests and its owner's runs (object-level authorization by construction).
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db.models import McpConnection
from app.lib.problems import ProblemException
from app.tools.mcp.catalog import ListingFailed, McpCatalog
from app.tools.mcp.config import McpServerSpec
from app.tools.mcp.vault import Vault, vault_from
from app.tools.toolsets import mcp_servers

OFF = "Per-user MCP servers are off on this server (MCP_TOKEN_KEY is not set)."


def per_user_servers() -> dict[str, McpServerSpec]:
    return {name: spec for name, spec in mcp_servers().items() if spec.per_user}


def vault_or_none(key: str | None) -> Vault | None:
    found = vault_from(key)
    return found if isinstance(found, Vault) else None


def _server(name: str) -> McpServerSpec:
    spec = per_user_servers().get(name)
    if spec is None:
        raise ProblemException(404, f"No per-user MCP server is called {name!r}.")
    return spec


async def connections_of(session: AsyncSession, user_id: UUID) -> dict[str, datetime]:
    """server -> when this user connected it."""
    query = select(McpConnection.server, McpConnection.updated_at).where(
        McpConnection.user_id == user_id
    )
    return {server: at for server, at in (await session.execute(query)).all()}


async def connect_server(
    session: AsyncSession,
    user_id: UUID,
    name: str,
    token: str,
    vault: Vault | None,
    catalog: McpCatalog | None,
) -> datetime:
    """Check the token by listing the server's tools with it, then keep it (encrypted)."""
    _server(name)
    if vault is None or catalog is None:
        raise ProblemException(503, OFF)
    try:
        listing = await catalog.list_as_user(name, token)
    except ListingFailed as failed:
        if failed.denied is not None:
            raise ProblemException(
                422, f"The MCP server {name} refused the token (HTTP {failed.denied})."
            ) from None
        raise ProblemException(
            503, f"The MCP server {name} cannot be used: {failed.reason}."
        ) from None
    query = select(McpConnection).where(
        McpConnection.user_id == user_id, McpConnection.server == name
    )
    row = (await session.execute(query)).scalar_one_or_none()
    if row is None:
        row = McpConnection(user_id=user_id, server=name, token_ciphertext="", tools=[])
        session.add(row)
    row.token_ciphertext, row.tools = vault.seal(token), listing
    await session.flush()
    catalog.learn(name, listing)
    return row.updated_at


async def disconnect_server(session: AsyncSession, user_id: UUID, name: str) -> None:
    _server(name)
    gone = await session.execute(
        delete(McpConnection)
        .where(McpConnection.user_id == user_id, McpConnection.server == name)
        .returning(McpConnection.id)
    )
    if gone.first() is None:
        raise ProblemException(404, f"You have not connected {name}.")


async def user_token(
    sessions: async_sessionmaker[AsyncSession], user_id: UUID, server: str, vault: Vault
) -> str | None:
    """The run's user's own token for `server` (None: not connected, or sealed with
    another key)."""
    query = select(McpConnection.token_ciphertext).where(
        McpConnection.user_id == user_id, McpConnection.server == server
    )
    async with sessions() as session:
        sealed = (await session.execute(query)).scalar_one_or_none()
    return vault.open(sealed) if sealed is not None else None


async def latest_listings(sessions: async_sessionmaker[AsyncSession]) -> dict[str, list]:
    """Each per-user server's most recent listing (its tools are known after a restart)."""
    names = list(per_user_servers())
    if not names:
        return {}
    query = (
        select(McpConnection.server, McpConnection.tools)
        .where(McpConnection.server.in_(names))
        .order_by(McpConnection.updated_at)
    )
    async with sessions() as session:
        return {server: tools for server, tools in (await session.execute(query)).all()}
