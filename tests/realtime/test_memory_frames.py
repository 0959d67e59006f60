"""Memory changes reach every socket of the user (their other devices), and only theirs."""

from __future__ import annotations

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tests.conftest import ApiUser
from tests.memories.support import save
from tests.realtime.support import Server, WsClient


async def joined(ws: WsClient) -> None:
    """The socket listens to the user's channel before it answers its first frame."""
    await ws.send({"type": "ping"})
    await ws.wait_type("pong")


async def test_edits_and_deletes_reach_the_users_other_devices(
    server: Server,
    http: httpx.AsyncClient,
    alice: ApiUser,
    bob: ApiUser,
    session_factory: async_sessionmaker[AsyncSession],
) -> None:
    memory = await save(session_factory, alice.user.id, "Takes coffee black")
    async with (
        WsClient.connect(server.ws, alice.token) as phone,
        WsClient.connect(server.ws, alice.token) as tablet,
        WsClient.connect(server.ws, bob.token) as bobs,
    ):
        for ws in (phone, tablet, bobs):
            await joined(ws)
        url = f"/api/memories/{memory.id}"
        edited = await http.patch(url, json={"content": "Takes tea"}, headers=alice.headers)
        assert edited.status_code == 200, edited.text
        for ws in (phone, tablet):
            frame = await ws.wait_type("memory", change="saved")
            assert frame["memory"] == edited.json()  # the same MemoryRead as the API's

        assert (await http.delete(url, headers=alice.headers)).status_code == 204
        gone = await tablet.wait_type("memory", change="deleted")
        assert gone["memory_id"] == str(memory.id)

        # An agent's save reaches the phone too (the memory tool saves through the domain).
        saved = await save(session_factory, alice.user.id, "Allergic to peanuts")
        frame = await phone.wait_type("memory", change="saved", memory_id=str(saved.id))
        assert frame["memory"]["content"] == "Allergic to peanuts"

        assert (await http.delete("/api/memories", headers=alice.headers)).status_code == 200
        await phone.wait_type("memory", change="cleared")
        await bobs.send({"type": "ping"})
        await bobs.wait_for(lambda _: [f["type"] for f in bobs.frames].count("pong") == 2)
        assert not [f for f in bobs.frames if f["type"] == "memory"]


async def test_a_memory_too_long_to_carry_travels_by_id(
    server: Server,
    http: httpx.AsyncClient,
    alice: ApiUser,
    session_factory: async_sessionmaker[AsyncSession],
) -> None:
    memory = await save(session_factory, alice.user.id, "short")
    async with WsClient.connect(server.ws, alice.token) as phone:
        await joined(phone)
        long = "word " * 1500
        url = f"/api/memories/{memory.id}"
        assert (await http.patch(url, json={"content": long}, headers=alice.headers)).is_success
        frame = await phone.wait_type("memory", change="saved")
        assert frame["memory_id"] == str(memory.id)
        assert frame.get("memory") is None
        assert (await http.get(url, headers=alice.headers)).json()["content"] == long.strip()
