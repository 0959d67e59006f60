"""/api/ws in the metrics: open sockets, subscriptions, frames sent, back-fills; and the
handshake carries the request id."""

from __future__ import annotations

import uuid

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from websockets.asyncio.client import connect

from tests.conftest import ApiUser
from tests.realtime.conftest import new_thread
from tests.realtime.support import Server, WsClient, write_create
from tests.support.metrics import Scrape
from tests.support.processes import until


async def scrape(http: httpx.AsyncClient) -> Scrape:
    response = await http.get("/metrics")
    assert response.status_code == 200, response.text
    return Scrape(response.text)


async def test_sockets_subscriptions_frames_and_backfills_are_counted(
    server: Server,
    http: httpx.AsyncClient,
    alice: ApiUser,
    session_factory: async_sessionmaker[AsyncSession],
) -> None:
    thread_id = uuid.UUID(await new_thread(http, alice))
    before = await scrape(http)
    async with WsClient.connect(server.ws, alice.token) as ws:
        assert len(ws.conn.response.headers["X-Request-ID"]) == 32  # a fresh id
        await ws.subscribe(thread_id)
        await ws.wait_type("subscribed")
        # A write whose publish is lost, back-filled once the next one shows the gap.
        async with session_factory() as session:
            from app.threads import writer

            await writer.create_message(session, thread_id, role="user", content="lost")
            session.info.pop("on_commit")  # the outbox (app/db/outbox.py)
            await session.commit()
        await write_create(session_factory, thread_id, role="assistant", content="next")
        await ws.wait_type("message", seq=2)
        during = await scrape(http) - before
        assert during.value("toolcells_open_sockets") == 1
        assert during.value("toolcells_subscriptions") == 1
        assert during.value("toolcells_pubsub_backfills_total", reason="gap") == 1
        # subscribed, the back-filled message and the one after it (and any run frames)
        assert during.value("toolcells_frames_sent_total") >= 3

    async def closed() -> bool:  # the server notices the close on its own time
        return (await scrape(http) - before).value("toolcells_open_sockets") == 0

    await until(closed, timeout=10)
    assert (await scrape(http) - before).value("toolcells_subscriptions") == 0


async def test_the_handshake_echoes_a_sane_request_id(server: Server, alice: ApiUser) -> None:
    headers = {"Authorization": f"Bearer {alice.token}", "X-Request-ID": "ios-socket-7"}
    async with connect(server.ws, additional_headers=headers) as conn:
        assert conn.response.headers["X-Request-ID"] == "ios-socket-7"
