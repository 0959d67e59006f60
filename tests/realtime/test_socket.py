"""The /api/ws protocol: auth, subscribe/replay/live, errors, limits."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from websockets.exceptions import ConnectionClosed

from app.realtime.channels import RealtimeChannels
from tests.conftest import ApiUser
from tests.realtime.conftest import ServerFactory, new_thread
from tests.realtime.support import Server, WsClient, write_create, write_update


async def test_replay_then_subscribed_then_live_frames(
    server: Server,
    http: httpx.AsyncClient,
    alice: ApiUser,
    session_factory: async_sessionmaker[AsyncSession],
) -> None:
    thread_id = await new_thread(http, alice)
    first = await write_create(session_factory, uuid.UUID(thread_id), role="user", content="a")
    await write_create(session_factory, uuid.UUID(thread_id), role="assistant", content="b")
    async with WsClient.connect(server.ws, alice.token) as ws:
        await ws.subscribe(thread_id, after_seq=first.seq)
        subscribed = await ws.wait_type("subscribed")
        assert subscribed == {"type": "subscribed", "thread_id": thread_id, "last_seq": 2}
        # only seq 2 was replayed, before `subscribed`
        assert [f["seq"] for f in ws.frames if f["type"] == "message"] == [2]
        assert ws.frames.index(subscribed) == 1

        posted = await http.post(
            f"/api/threads/{thread_id}/messages", json={"content": "hi"}, headers=alice.headers
        )
        assert posted.status_code == 202, posted.text
        live = await ws.wait_type("message", seq=3)
        assert live["message"]["content"] == "hi"
        run = await ws.wait_type("run")
        assert run["run"]["id"] == posted.json()["run"]["id"]
        assert run["run"]["status"] == "queued"


async def test_latest_run_is_sent_on_subscribe(
    server: Server, http: httpx.AsyncClient, alice: ApiUser
) -> None:
    thread_id = await new_thread(http, alice)
    posted = await http.post(
        f"/api/threads/{thread_id}/messages", json={"content": "go"}, headers=alice.headers
    )
    async with WsClient.connect(server.ws, alice.token, query_token=True) as ws:
        await ws.subscribe(thread_id)
        await ws.wait_type("subscribed", last_seq=1)
        run = await ws.wait_type("run")
        assert run["run"]["id"] == posted.json()["run"]["id"]


@pytest.mark.parametrize("token", [None, "nope", "x" * 500])
async def test_bad_token_closes_4401(server: Server, alice: ApiUser, token: str | None) -> None:
    async with WsClient.connect(server.ws, token) as ws:
        assert await ws.wait_closed() == 4401


async def test_bad_query_token_closes_4401(server: Server, alice: ApiUser) -> None:
    async with WsClient.connect(server.ws, "wrong", query_token=True) as ws:
        assert await ws.wait_closed() == 4401


async def test_foreign_and_unknown_threads_are_not_found(
    server: Server, http: httpx.AsyncClient, alice: ApiUser, bob: ApiUser
) -> None:
    bobs_thread = await new_thread(http, bob)
    async with WsClient.connect(server.ws, alice.token) as ws:
        for thread_id in (bobs_thread, str(uuid.uuid4())):
            await ws.subscribe(thread_id)
            error = await ws.wait_type("error", thread_id=thread_id)
            assert error["error_type"] == "not_found"
        await ws.send({"type": "ping"})
        await ws.wait_type("pong")  # the socket stays open
        assert not [f for f in ws.frames if f["type"] in ("message", "subscribed")]


_NO_THREAD = "0190a2b4-0000-7000-8000-000000000000"  # fixed: test ids are the same in every process


@pytest.mark.parametrize(
    ("raw", "error_type"),
    [
        ("{not json", "bad_frame"),
        ("[1, 2]", "bad_frame"),
        ('{"type": "subscribe"}', "bad_frame"),
        ('{"type": "subscribe", "thread_id": "nope"}', "bad_frame"),
        (f'{{"type": "subscribe", "thread_id": "{_NO_THREAD}", "after_seq": -1}}', "bad_frame"),
        (f'{{"type": "subscribe", "thread_id": "{_NO_THREAD}", "after_seq": 1e99}}', "bad_frame"),
        ('{"type": "ping", "extra": 1}', "bad_frame"),
        ('{"no_type": 1}', "bad_frame"),
        ('{"type": "launch_missiles"}', "unknown_type"),
        ('{"type": 7}', "bad_frame"),
        ("x" * 5000, "limit"),
    ],
)
async def test_malformed_frames_answer_errors_and_keep_the_socket(
    server: Server, alice: ApiUser, raw: str, error_type: str
) -> None:
    async with WsClient.connect(server.ws, alice.token) as ws:
        await ws.send(raw)
        error = await ws.wait_type("error")
        assert error["error_type"] == error_type
        if error_type == "unknown_type":
            assert error["allowed_types"] == ["subscribe", "unsubscribe", "ping"]
        await ws.send({"type": "ping"})
        await ws.wait_type("pong")


@pytest.mark.parametrize(
    "raw",
    [
        "[" * 1900 + "]" * 1900,  # 3.8 KB, deeper than Python's recursion limit
        '[{"":' * 580 + "1" + "}]" * 580,  # nested objects, under the 4096-byte limit
        '{"type": "ping", "x": ' + "[" * 1800 + "]" * 1800 + "}",
        b'{"type": "ping\xff"}',  # a binary frame that is not UTF-8
        b'{"type": "subscribe", "thread_id": "\xc3\x28"}',
    ],
    ids=["nested-arrays", "nested-objects", "nested-field", "bad-utf8", "bad-utf8-field"],
)
async def test_hostile_frames_answer_bad_frame_and_keep_the_socket(
    server: Server, alice: ApiUser, raw: str | bytes
) -> None:
    async with WsClient.connect(server.ws, alice.token) as ws:
        await ws.conn.send(raw)
        error = await ws.wait_type("error")
        assert error["error_type"] == "bad_frame"
        await ws.send({"type": "ping"})
        await ws.wait_type("pong")
        assert ws.close_code is None


async def test_protocol_and_app_pings_are_answered(server: Server, alice: ApiUser) -> None:
    async with WsClient.connect(server.ws, alice.token) as ws:
        async with asyncio.timeout(5):
            await (await ws.conn.ping())  # a protocol ping: the server answers with a pong
        await ws.send({"type": "ping"})
        assert await ws.wait_type("pong") == {"type": "pong"}


async def test_binary_frames_are_accepted(server: Server, alice: ApiUser) -> None:
    async with WsClient.connect(server.ws, alice.token) as ws:
        await ws.conn.send(b'{"type": "ping"}')
        await ws.wait_type("pong")


async def test_cursor_ahead_of_the_thread_gets_reset(
    server: Server, http: httpx.AsyncClient, alice: ApiUser
) -> None:
    thread_id = await new_thread(http, alice)
    async with WsClient.connect(server.ws, alice.token) as ws:
        await ws.subscribe(thread_id, after_seq=99)
        assert await ws.wait_type("reset") == {
            "type": "reset",
            "thread_id": thread_id,
            "last_seq": 0,
        }


async def test_gap_is_backfilled_and_big_messages_arrive(
    server: Server,
    http: httpx.AsyncClient,
    alice: ApiUser,
    session_factory: async_sessionmaker[AsyncSession],
) -> None:
    thread_id = uuid.UUID(await new_thread(http, alice))
    async with WsClient.connect(server.ws, alice.token) as ws:
        await ws.subscribe(thread_id)
        await ws.wait_type("subscribed")
        # A write whose publish is lost (as if pub/sub dropped it) ...
        async with session_factory() as session:
            from app.threads import writer

            await writer.create_message(session, thread_id, role="user", content="lost")
            session.info.pop("on_commit")  # the outbox (app/db/outbox.py)
            await session.commit()
        # ... is back-filled when the next one shows the gap; a big one goes by reference.
        big = "b" * 20_000
        await write_create(session_factory, thread_id, role="assistant", content=big)
        second = await ws.wait_type("message", seq=2)
        first = await ws.wait_type("message", seq=1)
        assert ws.frames.index(first) < ws.frames.index(second)
        assert first["message"]["content"] == "lost"
        assert second["message"]["content"] == big


async def test_unsubscribe_and_resubscribe(
    server: Server,
    http: httpx.AsyncClient,
    alice: ApiUser,
    session_factory: async_sessionmaker[AsyncSession],
) -> None:
    thread_id = uuid.UUID(await new_thread(http, alice))
    message = await write_create(session_factory, thread_id, role="user", content="a")
    async with WsClient.connect(server.ws, alice.token) as ws:
        await ws.subscribe(thread_id)
        await ws.wait_type("subscribed")
        await ws.send({"type": "unsubscribe", "thread_id": str(thread_id)})
        await ws.send({"type": "ping"})
        await ws.wait_type("pong")
        await write_update(session_factory, message.id, content="b")
        await ws.subscribe(thread_id, after_seq=1)
        update = await ws.wait_type("message", seq=2)
        assert update["message"]["content"] == "b"
        assert len([f for f in ws.frames if f["type"] == "message"]) == 2


async def test_limits_subscriptions_rate_and_idle(
    start_server: ServerFactory,
    client: httpx.AsyncClient,
    alice: ApiUser,
) -> None:
    async with (
        start_server(ws_max_subscriptions=2, ws_frame_burst=5, ws_frame_rate=0.001) as srv,
        httpx.AsyncClient(base_url=srv.http) as http,
    ):
        threads = [await new_thread(http, alice) for _ in range(3)]
        async with WsClient.connect(srv.ws, alice.token) as ws:
            for thread_id in threads:
                await ws.subscribe(thread_id)
            error = await ws.wait_type("error", thread_id=threads[2])
            assert error["error_type"] == "limit"
            await ws.wait_type("subscribed", thread_id=threads[0])
            await ws.wait_type("subscribed", thread_id=threads[1])
            # 3 frames used of a burst of 5 (rate ~0): 2 more pass, then `limit`
            for _ in range(3):
                await ws.send({"type": "ping"})
            await ws.wait_for(lambda f: f["type"] == "error" and "slow down" in f["error"])
            assert len([f for f in ws.frames if f["type"] == "pong"]) == 2

    async with (
        start_server(ws_idle_timeout_seconds=0.3) as srv,
        WsClient.connect(srv.ws, alice.token) as ws,
    ):
        assert await ws.wait_closed() == 4408


async def test_socket_survives_client_leaving_mid_replay(
    server: Server,
    http: httpx.AsyncClient,
    alice: ApiUser,
    session_factory: async_sessionmaker[AsyncSession],
) -> None:
    thread_id = uuid.UUID(await new_thread(http, alice))
    for index in range(30):
        await write_create(session_factory, thread_id, role="user", content=f"m{index}")
    for _ in range(3):
        try:
            async with WsClient.connect(server.ws, alice.token) as ws:
                await ws.subscribe(thread_id)
        except ConnectionClosed:
            pass
    async with WsClient.connect(server.ws, alice.token) as ws:
        await ws.subscribe(thread_id, after_seq=25)
        assert (await ws.wait_type("subscribed"))["last_seq"] == 30

    # every subscriber was released, including those stopped in the middle of subscribing
    # (the process's own control channel stays)
    channels = server.app.plugins.get(RealtimeChannels)

    def thread_subscribers() -> list[object]:
        return [
            subscriber
            for subscriber in channels.fanout.listeners()
            if subscriber.channel != channels.control_channel
        ]

    async with asyncio.timeout(5):
        while thread_subscribers():  # noqa: ASYNC110 - no event to wait on
            await asyncio.sleep(0.01)


async def test_channels_of_left_threads_are_forgotten(
    server: Server, http: httpx.AsyncClient, alice: ApiUser
) -> None:
    channels = server.app.plugins.get(RealtimeChannels)
    threads = [await new_thread(http, alice) for _ in range(3)]
    async with WsClient.connect(server.ws, alice.token) as ws:
        for thread_id in threads:
            await ws.subscribe(thread_id)
            await ws.wait_type("subscribed", thread_id=thread_id)
        assert {channels.channel_for(uuid.UUID(t)) for t in threads} <= set(channels.channel_names)
        await ws.send({"type": "unsubscribe", "thread_id": threads[0]})
        await ws.send({"type": "ping"})
        await ws.wait_type("pong")
        assert channels.channel_for(uuid.UUID(threads[0])) not in channels.channel_names
        assert channels.channel_for(uuid.UUID(threads[1])) in channels.channel_names
    # the socket closed: its other threads are gone too, the control channel stays
    async with asyncio.timeout(5):
        while set(channels.channel_names) != {channels.control_channel}:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
