"""A socket whose token is revoked or expires after it connected is closed with 4401."""

from __future__ import annotations

from datetime import timedelta

import httpx
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db.models import ApiToken
from app.lib.security import token_digest
from app.lib.time import utcnow
from tests.conftest import ApiUser
from tests.realtime.conftest import ServerFactory, new_thread
from tests.realtime.support import WsClient, server_process


async def test_revoking_the_token_on_another_process_closes_the_socket(
    process_env: dict[str, str], client: httpx.AsyncClient, alice: ApiUser, bob: ApiUser
) -> None:
    # The periodic check is an hour away: only the announcement can close the socket.
    env = {**process_env, "WS_TOKEN_CHECK_SECONDS": "3600"}
    async with (
        server_process(env) as first,
        server_process(env) as second,
        httpx.AsyncClient(base_url=second) as http,
    ):
        thread_id = await new_thread(http, alice)
        ws_url = first.replace("http://", "ws://") + "/api/ws"
        async with (
            WsClient.connect(ws_url, alice.token) as ws,
            WsClient.connect(ws_url, bob.token) as bobs,
        ):
            await ws.subscribe(thread_id)
            await ws.wait_type("subscribed")

            revoked = await http.delete("/api/auth/token", headers=alice.headers)
            assert revoked.status_code == 204, revoked.text
            assert await ws.wait_closed() == 4401

            await bobs.send({"type": "ping"})  # another token's socket stays open
            await bobs.wait_type("pong")


async def test_an_expired_token_closes_the_socket(
    start_server: ServerFactory,
    client: httpx.AsyncClient,
    alice: ApiUser,
    bob: ApiUser,
    session_factory: async_sessionmaker[AsyncSession],
) -> None:
    async with (
        start_server(ws_token_check_seconds=0.2) as server,
        WsClient.connect(server.ws, alice.token) as ws,
        WsClient.connect(server.ws, bob.token) as bobs,
    ):
        await ws.send({"type": "ping"})
        await ws.wait_type("pong")
        async with session_factory.begin() as session:
            await session.execute(
                update(ApiToken)
                .where(ApiToken.token_hash == token_digest(alice.token))
                .values(expires_at=utcnow() - timedelta(seconds=1))
            )
        assert await ws.wait_closed() == 4401

        await bobs.send({"type": "ping"})
        await bobs.wait_type("pong")
        assert bobs.close_code is None


async def test_a_token_revoked_in_the_database_closes_the_socket(
    start_server: ServerFactory,
    client: httpx.AsyncClient,
    alice: ApiUser,
    session_factory: async_sessionmaker[AsyncSession],
) -> None:
    # Revoked without the announcement (another deployment's tool, a lost publish).
    async with (
        start_server(ws_token_check_seconds=0.2) as server,
        WsClient.connect(server.ws, alice.token) as ws,
    ):
        await ws.send({"type": "ping"})
        await ws.wait_type("pong")
        async with session_factory.begin() as session:
            await session.execute(
                update(ApiToken)
                .where(ApiToken.token_hash == token_digest(alice.token))
                .values(revoked_at=utcnow())
            )
        assert await ws.wait_closed() == 4401
