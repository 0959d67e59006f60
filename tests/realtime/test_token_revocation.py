"""A socket whose token is revoked or expires after it connected is closed with 4401."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db.models import ApiToken
from app.lib.security import token_digest
from app.lib.time import utcnow
from tests.conftest import ApiUser
from tests.realtime.conftest import ServerFactory, new_thread
from tests.realtime.support import WsClient, two_processes


async def test_revoking_the_token_on_another_process_closes_the_socket(
    process_env: dict[str, str], client: httpx.AsyncClient, alice: ApiUser, bob: ApiUser
) -> None:
    # The periodic check is an hour away: only the announcement can close the socket.
    env = {**process_env, "WS_TOKEN_CHECK_SECONDS": "3600"}
    async with two_processes(env) as processes:
        http = processes.http
        thread_id = await new_thread(http, alice)
        async with (
            WsClient.connect(processes.ws, alice.token) as ws,
            WsClient.connect(processes.ws, bob.token) as bobs,
        ):
            await ws.subscribe(thread_id)
            await ws.wait_type("subscribed")

            revoked = await http.delete("/api/auth/token", headers=alice.headers)
            assert revoked.status_code == 204, revoked.text
            assert await ws.wait_closed() == 4401

            await bobs.send({"type": "ping"})  # another token's socket stays open
            await bobs.wait_type("pong")


@pytest.mark.parametrize(
    "change",
    [
        {"expires_at": utcnow() - timedelta(seconds=1)},
        {"revoked_at": utcnow()},  # without the announcement (a lost publish, another tool)
    ],
    ids=["expired", "revoked-in-the-database"],
)
async def test_a_token_no_longer_valid_closes_the_socket_within_the_check_interval(
    start_server: ServerFactory,
    client: httpx.AsyncClient,
    alice: ApiUser,
    bob: ApiUser,
    session_factory: async_sessionmaker[AsyncSession],
    change: dict[str, Any],
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
                .values(**change)
            )
        assert await ws.wait_closed() == 4401

        await bobs.send({"type": "ping"})  # another token's socket stays open
        await bobs.wait_type("pong")
        assert bobs.close_code is None
