"""The Zulip rule: old state + applied frames == a fresh fetch, whatever happens between.

Seeded random histories (REALTIME_SEED shifts the seeds) of message creates, tool-activity
transitions, progress updates and final texts, some written concurrently, while a client
applies frames and is disconnected and resubscribed with its last seq at random points,
including in the middle of a replay and across a server restart.
"""

from __future__ import annotations

import os
import random
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tests.conftest import ApiUser
from tests.realtime.conftest import ServerFactory, new_thread
from tests.realtime.scenario import Scenario
from tests.realtime.support import Server, ThreadState, WsClient, fetch_messages

BASE_SEED = int(os.environ.get("REALTIME_SEED", "20261122"))
STEPS = 40


class ResumingClient:
    """A client that keeps its state across connections and checks ascending seq."""

    def __init__(self, thread_id: str, token: str) -> None:
        self.thread_id, self.token = thread_id, token
        self.state = ThreadState()
        self.connections = 0

    @asynccontextmanager
    async def connected(self, server: Server) -> AsyncIterator[WsClient]:
        seen: list[int] = []

        def on_frame(frame: dict[str, Any]) -> None:
            if frame["type"] == "message":
                assert frame["thread_id"] == self.thread_id
                assert not seen or frame["seq"] > seen[-1], "seq must ascend, no duplicates"
                seen.append(frame["seq"])
            if frame["type"] in ("message", "branch"):  # a replay may end with the leaf
                self.state.apply(frame)
            assert frame["type"] in ("message", "branch", "subscribed", "run"), frame

        self.connections += 1
        async with WsClient.connect(server.ws, self.token, on_frame=on_frame) as ws:
            await ws.subscribe(self.thread_id, after_seq=self.state.last_seq)
            yield ws

    async def catch_up(self, ws: WsClient, last_seq: int) -> None:
        await ws.wait_for(lambda _frame: self.state.last_seq >= last_seq)


async def run_history(
    rng: random.Random, scenario: Scenario, client: ResumingClient, server: Server
) -> None:
    """STEPS random writes; the client reconnects (sometimes mid-replay) at random."""
    steps = 0
    while steps < STEPS:
        async with client.connected(server) as ws:
            if rng.random() < 0.2:
                continue  # leave at once: in the middle of the replay
            for _ in range(rng.randint(1, 12)):
                if rng.random() < 0.2:
                    await scenario.burst(rng.randint(2, 4))
                else:
                    await scenario.step()
                steps += 1
            if rng.random() < 0.5:
                await ws.wait_type("subscribed")


async def assert_state_equals_fetch(
    client: ResumingClient, server: Server, http: httpx.AsyncClient, user: ApiUser
) -> None:
    fresh = await fetch_messages(http, client.thread_id, user.headers)
    async with client.connected(server) as ws:
        await client.catch_up(ws, fresh["last_seq"])
    assert client.state.last_seq == fresh["last_seq"]
    assert client.state.messages == fresh["messages"]


@pytest.mark.parametrize("seed_offset", [0, 1, 2])
async def test_frames_applied_across_reconnects_equal_a_fetch(
    server: Server,
    http: httpx.AsyncClient,
    alice: ApiUser,
    session_factory: async_sessionmaker[AsyncSession],
    seed_offset: int,
) -> None:
    rng = random.Random(BASE_SEED + seed_offset)
    thread_id = await new_thread(http, alice)
    scenario = Scenario(rng, session_factory, uuid.UUID(thread_id))
    client = ResumingClient(thread_id, alice.token)
    await run_history(rng, scenario, client, server)
    await assert_state_equals_fetch(client, server, http, alice)
    assert client.connections > 2


async def test_frames_applied_across_a_server_restart_equal_a_fetch(
    start_server: ServerFactory,
    client: httpx.AsyncClient,
    alice: ApiUser,
    session_factory: async_sessionmaker[AsyncSession],
) -> None:
    rng = random.Random(BASE_SEED + 100)
    async with start_server() as first, httpx.AsyncClient(base_url=first.http) as http:
        thread_id = await new_thread(http, alice)
        scenario = Scenario(rng, session_factory, uuid.UUID(thread_id))
        resuming = ResumingClient(thread_id, alice.token)
        async with resuming.connected(first) as ws:
            for _ in range(15):
                await scenario.step()
            await ws.wait_type("subscribed")
            # the server goes away under the client, with frames possibly in flight
    for _ in range(10):  # written while no server runs: only the database has them
        await scenario.step()
    async with start_server() as second, httpx.AsyncClient(base_url=second.http) as http:
        await run_history(rng, scenario, resuming, second)
        await assert_state_equals_fetch(resuming, second, http, alice)


async def test_frames_applied_over_redis_pubsub_equal_a_fetch(
    start_server: ServerFactory,
    client: httpx.AsyncClient,
    alice: ApiUser,
    session_factory: async_sessionmaker[AsyncSession],
) -> None:
    rng = random.Random(BASE_SEED + 200)
    redis_url = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    async with (
        start_server(redis_url=redis_url) as server,
        httpx.AsyncClient(base_url=server.http) as http,
    ):
        thread_id = await new_thread(http, alice)
        scenario = Scenario(rng, session_factory, uuid.UUID(thread_id))
        resuming = ResumingClient(thread_id, alice.token)
        await run_history(rng, scenario, resuming, server)
        await assert_state_equals_fetch(resuming, server, http, alice)
