"""Users' own connections to per-user MCP servers: connect with a token, list, revoke.

Every query is scoped to the current user: a connection is only ever read for its owner's
requests and its owner's runs (object-level authorization by construction).
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.connections.vault import Vault, vault_from
from app.db.models import McpConnection
from app.lib.problems import ProblemException
from app.tools.mcp.catalog import ListingFailed, McpCatalog
from app.tools.mcp.credentials import OFF
from app.tools.mcp_config import McpServerSpec
from app.tools.runtime.toolsets import mcp_servers


def per_user_servers() -> dict[str, McpServerSpec]:
    return {name: spec for name, spec in mcp_servers().items() if spec.per_user}


def vault_or_none(key: str | None) -> Vault | None:
    found = vault_from(key)
    return found if isinstance(found, Vault) else None


def server_spec(name: str) -> McpServerSpec:
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


async def check_token(name: str, token: str, catalog: McpCatalog) -> list[dict]:
    """The server's tools as `token` lists them; a problem when the server refuses it."""
    try:
        return await catalog.list_as_user(name, token)
    except ListingFailed as failed:
        if failed.denied is not None:
            raise ProblemException(
                422, f"The MCP server {name} refused the token (HTTP {failed.denied})."
            ) from None
        raise ProblemException(
            503, f"The MCP server {name} cannot be used: {failed.reason}."
        ) from None


async def store(
    session: AsyncSession,
    user_id: UUID,
    name: str,
    token: str,
    vault: Vault,
    catalog: McpCatalog,
    oauth: tuple[str, datetime | None] | None = None,
) -> datetime:
    """Check the token by listing the server's tools with it, then keep it (encrypted);
    `oauth`: the grant (JSON, sealed here too) and when the access token expires."""
    listing = await check_token(name, token, catalog)
    query = select(McpConnection).where(
        McpConnection.user_id == user_id, McpConnection.server == name
    )
    row = (await session.execute(query)).scalar_one_or_none()
    if row is None:
        row = McpConnection(user_id=user_id, server=name, token_ciphertext="", tools=[])
        session.add(row)
    row.token_ciphertext, row.tools = vault.seal(token), listing
    row.oauth_ciphertext = vault.seal(oauth[0]) if oauth is not None else None
    row.expires_at = oauth[1] if oauth is not None else None
    await session.flush()
    catalog.learn(name, listing)
    return row.updated_at


async def connect_server(
    session: AsyncSession,
    user_id: UUID,
    name: str,
    token: str,
    vault: Vault | None,
    catalog: McpCatalog | None,
) -> datetime:
    """Connect with a token the user has (a personal access token)."""
    server_spec(name)
    if vault is None or catalog is None:
        raise ProblemException(503, OFF)
    return await store(session, user_id, name, token, vault, catalog)


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
