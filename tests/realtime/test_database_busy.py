"""A socket whose database reads cannot get a connection (the process's budget is taken and
the pool wait times out) is closed with 4429, the code that tells the app to resume from
its last seq, not 1011 (a server bug)."""

from __future__ import annotations

import httpx
from advanced_alchemy.extensions.litestar import SQLAlchemyPlugin
from sqlalchemy import text

from tests.conftest import ApiUser
from tests.realtime.conftest import ServerFactory, new_thread
from tests.realtime.support import WsClient

BUSY = {"database_max_connections": 1, "database_pool_timeout_seconds": 0.2}


async def test_pool_exhausted_closes_4429(
    start_server: ServerFactory, client: httpx.AsyncClient, alice: ApiUser
) -> None:
    async with start_server(**BUSY) as server:
        engine = server.app.plugins.get(SQLAlchemyPlugin).config[0].get_engine()
        async with httpx.AsyncClient(base_url=server.http) as http:
            thread_id = await new_thread(http, alice)
        async with (
            WsClient.connect(server.ws, alice.token) as subscribing,
            engine.connect() as held,  # the process's only connection
        ):
            await held.execute(text("SELECT 1"))
            await subscribing.subscribe(thread_id)
            assert await subscribing.wait_closed() == 4429
            async with WsClient.connect(server.ws, alice.token) as connecting:
                assert await connecting.wait_closed() == 4429  # its token lookup waited
