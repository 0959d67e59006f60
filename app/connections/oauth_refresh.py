"""The access token of a user's OAuth connection, refreshed first when it has expired: one
refresh at a time per connection, across every process.

A refresh spends the refresh token: an authorization server that rotates them refuses the
old one afterwards, and one that sees it spent twice may take it for stolen and revoke the
whole grant (OAuth 2.1 §4.3.1). So a process claims the connection's row until
`REFRESH_CLAIM_SECONDS` later (database clock, app/db/clock.py) before it
asks, and stores the new tokens with the claim cleared; a process that finds the row
claimed waits for that token instead. A claim its holder left behind (the process died)
lapses and the next caller claims it. No database connection is held while the
authorization server answers; inside a process, a lock keeps callers off the database.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from uuid import UUID

import msgspec
from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.connections import oauth_tokens
from app.connections.oauth_discovery import OAuthUnavailable
from app.connections.oauth_tokens import Grant, TokenRefused
from app.connections.vault import Vault
from app.db import clock
from app.db.models import McpConnection
from app.lib.time import utcnow
from app.settings import Settings

REFRESH_MARGIN_SECONDS = 30  # a token this close to expiring is refreshed before a call
REFRESH_CLAIM_SECONDS = 60  # beyond any refresh's answer (the OAuth fetcher's timeouts)
WAIT_POLL_SECONDS = 0.2  # how often a process waiting on another's refresh looks

Sessions = async_sessionmaker[AsyncSession]

# (user, server) -> the lock this process's refreshes take
_refreshing: dict[tuple[UUID, str], asyncio.Lock] = {}


async def bearer(
    sessions: Sessions,
    settings: Settings,
    user_id: UUID,
    server: str,
    vault: Vault,
    *,
    refused: bool = False,
) -> str | None:
    """The user's access token for `server`, refreshed first when it has expired (or, with
    `refused`, because the server refused it: expired early, clocks apart); None: not
    connected, sealed with another key, or the refresh was refused (reconnect)."""
    async with _refreshing.setdefault((user_id, server), asyncio.Lock()):
        row = await _connection(sessions, user_id, server)
        while row is not None:
            if row.oauth_ciphertext is None or not (refused or _expiring(row)):
                return None if refused else vault.open(row.token_ciphertext)
            if await _claim(sessions, row):
                return await _refresh(sessions, settings, row, vault)
            seen, row = row, await _wait_for_refresh(sessions, row)
            if row is not None and row.oauth_ciphertext != seen.oauth_ciphertext:
                return vault.open(row.token_ciphertext)  # refreshed by the claim's holder
            if row is not None and row.refresh_claimed_until is None:
                return None  # released with no new token: the refresh was refused there
            # the claim lapsed (its process died): look again, claim it if still due
        return None


def _expiring(row: McpConnection) -> bool:
    soon = utcnow() + timedelta(seconds=REFRESH_MARGIN_SECONDS)
    return row.expires_at is not None and row.expires_at <= soon


async def _connection(sessions: Sessions, user_id: UUID, server: str) -> McpConnection | None:
    query = select(McpConnection).where(
        McpConnection.user_id == user_id, McpConnection.server == server
    )
    async with sessions() as session:
        return (await session.execute(query)).scalar_one_or_none()


async def _claim(sessions: Sessions, row: McpConnection) -> bool:
    """Whether this process now holds the row's refresh (the grant as read, not claimed)."""
    now = clock.now()
    claim = (
        update(McpConnection)
        .where(
            McpConnection.id == row.id,
            McpConnection.oauth_ciphertext == row.oauth_ciphertext,
            or_(
                McpConnection.refresh_claimed_until.is_(None),
                McpConnection.refresh_claimed_until < now,
            ),
        )
        .values(refresh_claimed_until=now + timedelta(seconds=REFRESH_CLAIM_SECONDS))
    )
    async with sessions() as session:
        claimed = (await session.execute(claim)).rowcount == 1
        await session.commit()
    return claimed


async def _wait_for_refresh(sessions: Sessions, seen: McpConnection) -> McpConnection | None:
    """The row once another process's refresh changed it, released it or let it lapse."""
    while True:
        await asyncio.sleep(WAIT_POLL_SECONDS)
        row = await _connection(sessions, seen.user_id, seen.server)
        if row is None or row.oauth_ciphertext != seen.oauth_ciphertext:
            return row
        claimed_until = row.refresh_claimed_until
        if claimed_until is None or claimed_until < clock.now():
            return row


async def _refresh(
    sessions: Sessions, settings: Settings, row: McpConnection, vault: Vault
) -> str | None:
    """Refresh under this process's claim; the new tokens stored, the claim released."""
    sealed = vault.open(row.oauth_ciphertext or "")
    fresh = None
    if sealed is not None:
        grant = msgspec.json.decode(sealed, type=Grant)
        try:  # no database connection is held while the authorization server answers
            fresh = await oauth_tokens.refresh(settings, grant)
        except (TokenRefused, OAuthUnavailable):
            fresh = None
    values: dict[str, object] = {"refresh_claimed_until": None}
    if fresh is not None:
        grant = msgspec.structs.replace(
            grant, refresh_token=fresh.refresh_token or grant.refresh_token
        )
        values |= {
            "token_ciphertext": vault.seal(fresh.access_token),
            "oauth_ciphertext": vault.seal(msgspec.json.encode(grant).decode()),
            "expires_at": oauth_tokens.expiry(fresh),
        }
    async with sessions() as session:
        await session.execute(
            update(McpConnection).where(McpConnection.id == row.id).values(values)
        )
        await session.commit()
    return None if fresh is None else fresh.access_token
