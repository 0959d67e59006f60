"""Rotating MCP_TOKEN_KEY without disconnecting anyone: several keys (the first seals, every
one opens), then `litestar connections rekey` seals every stored secret with the first, so
the old key can go."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from uuid import UUID

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.pool import NullPool

from app.connections.vault import Vault, vault_from
from app.db.models import McpConnection, McpOAuthState, User
from app.lib.time import utcnow
from tests.support.cli import litestar, ok
from tests.support.databases import migrate

OLD, NEW, LOST = (Fernet.generate_key().decode() for _ in range(3))


def test_several_keys_the_first_seals_every_one_opens() -> None:
    sealed_with_old = Vault(OLD).seal("ghp_old")
    rotating = Vault(f"{NEW}, {OLD}")
    assert rotating.key_count == 2
    assert rotating.open(sealed_with_old) == "ghp_old"  # still connected after the rotation
    fresh = rotating.seal("ghp_new")
    assert Vault(NEW).open(fresh) == "ghp_new" and Vault(OLD).open(fresh) is None
    resealed = rotating.reseal(sealed_with_old)
    assert resealed is not None and Vault(NEW).open(resealed) == "ghp_old"
    assert rotating.open(Vault(LOST).seal("x")) is None
    assert rotating.reseal(Vault(LOST).seal("x")) is None


def test_a_bad_key_among_several_is_named() -> None:
    assert vault_from(f"{NEW},not-a-key") == (
        "MCP_TOKEN_KEY: key 2 of 2 is not a Fernet key "
        "(32 url-safe base64-encoded bytes: `Fernet.generate_key()`)"
    )
    assert vault_from("nope").startswith("MCP_TOKEN_KEY: the key is not a Fernet key")
    assert vault_from(None) is None and vault_from(" , ") is None
    assert isinstance(vault_from(f"{NEW},{OLD}"), Vault)


async def _arrange(database_url: str) -> dict[str, UUID]:
    engine = create_async_engine(database_url, poolclass=NullPool)
    old, lost = Vault(OLD), Vault(LOST)
    try:
        async with AsyncSession(engine, expire_on_commit=False) as session:
            user = User(email="rotate@example.com", password_hash="x")
            session.add(user)
            await session.flush()
            plain = McpConnection(
                user_id=user.id, server="github", token_ciphertext=old.seal("ghp_1"), tools=[]
            )
            oauth = McpConnection(
                user_id=user.id,
                server="linear",
                token_ciphertext=old.seal("lin_access"),
                oauth_ciphertext=old.seal('{"refresh_token": "lin_refresh"}'),
                tools=[],
            )
            gone = McpConnection(
                user_id=user.id, server="notion", token_ciphertext=lost.seal("n"), tools=[]
            )
            pending = McpOAuthState(
                state_digest="d" * 64,
                user_id=user.id,
                server="linear",
                pending_ciphertext=old.seal('{"verifier": "v"}'),
                expires_at=utcnow() + timedelta(minutes=10),
            )
            session.add_all([plain, oauth, gone, pending])
            await session.commit()
            return {"plain": plain.id, "oauth": oauth.id, "gone": gone.id, "pending": pending.id}
    finally:
        await engine.dispose()


async def _rows(database_url: str) -> tuple[dict[UUID, McpConnection], McpOAuthState]:
    engine = create_async_engine(database_url, poolclass=NullPool)
    try:
        async with AsyncSession(engine) as session:
            connections = {row.id: row for row in await session.scalars(select(McpConnection))}
            (pending,) = await session.scalars(select(McpOAuthState))
            return connections, pending
    finally:
        await engine.dispose()


def test_rekey_seals_every_stored_secret_with_the_first_key(empty_database: str) -> None:
    migrate(empty_database)
    ids = asyncio.run(_arrange(empty_database))
    before, _ = asyncio.run(_rows(empty_database))
    result = litestar(empty_database, "connections", "rekey", env={"MCP_TOKEN_KEY": f"{NEW},{OLD}"})
    assert ok(result).strip() == "Sealed 4 secret(s) again with the first of 2 key(s)."
    assert "1 secret(s) open with none of the keys" in result.stderr

    connections, pending = asyncio.run(_rows(empty_database))
    new_only = Vault(NEW)  # the old key can go now
    assert new_only.open(connections[ids["plain"]].token_ciphertext) == "ghp_1"
    oauth = connections[ids["oauth"]]
    assert new_only.open(oauth.token_ciphertext) == "lin_access"
    assert new_only.open(oauth.oauth_ciphertext or "") == '{"refresh_token": "lin_refresh"}'
    assert new_only.open(pending.pending_ciphertext) == '{"verifier": "v"}'
    # what no key opens is left as it was: its user connects again
    gone = connections[ids["gone"]]
    assert gone.token_ciphertext == before[ids["gone"]].token_ciphertext
    # when each user connected is kept (GET /api/mcp/servers shows it)
    assert {i: c.updated_at for i, c in connections.items()} == {
        i: c.updated_at for i, c in before.items()
    }

    again = litestar(empty_database, "connections", "rekey", env={"MCP_TOKEN_KEY": NEW})
    assert ok(again).strip() == "Sealed 4 secret(s) again with the first of 1 key(s)."


@pytest.mark.parametrize("key", ["", "not-a-key"])
def test_rekey_without_a_usable_key_says_why(empty_database: str, key: str) -> None:
    migrate(empty_database)
    result = litestar(empty_database, "connections", "rekey", env={"MCP_TOKEN_KEY": key})
    assert result.exit_code != 0
    assert "MCP_TOKEN_KEY" in result.stderr
