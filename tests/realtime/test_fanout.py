"""The fan-out on Litestar's public ChannelsBackend interface, against a scripted backend."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Iterable
from typing import Any

import pytest
from litestar.channels.backends.base import ChannelsBackend

from app.realtime import fanout
from app.realtime.fanout import Fanout


class ScriptedBackend(ChannelsBackend):
    """Records (un)subscriptions; `events` feeds stream_events, an Exception item raises."""

    def __init__(self) -> None:
        self.subscribed: list[str] = []
        self.unsubscribed: list[str] = []
        self.events: asyncio.Queue[Any] = asyncio.Queue()
        self.refuse = False

    async def on_startup(self) -> None: ...

    async def on_shutdown(self) -> None: ...

    async def publish(self, data: bytes, channels: Iterable[str]) -> None:
        for channel in channels:
            self.events.put_nowait((channel, data))

    async def subscribe(self, channels: Iterable[str]) -> None:
        if self.refuse:
            raise ConnectionError("backend down")
        self.subscribed += channels

    async def unsubscribe(self, channels: Iterable[str]) -> None:
        self.unsubscribed += channels

    async def stream_events(self) -> AsyncGenerator[tuple[str, Any], None]:
        while True:
            item = await self.events.get()
            if isinstance(item, Exception):
                raise item
            yield item

    async def get_history(self, channel: str, limit: int | None = None) -> list[bytes]:
        return []


async def test_one_backend_subscription_per_channel_forgotten_with_its_last_listener() -> None:
    backend = ScriptedBackend()
    hub = Fanout(backend)
    first, second = await hub.join("a"), await hub.join("a")
    assert backend.subscribed == ["a"] and hub.channels == {"a"}
    await hub.leave(first)
    assert backend.unsubscribed == [] and hub.channels == {"a"}
    await hub.leave(second)
    await hub.leave(second)  # twice: nothing more
    assert backend.unsubscribed == ["a"] and hub.channels == frozenset()


async def test_a_refused_subscribe_leaves_nobody_registered() -> None:
    backend = ScriptedBackend()
    hub = Fanout(backend)
    backend.refuse = True
    with pytest.raises(ConnectionError):
        await hub.join("a")
    assert hub.channels == frozenset()
    backend.refuse = False
    await hub.join("a")  # the next subscribe reaches the backend again
    assert backend.subscribed == ["a"]


async def test_events_reach_the_channels_listeners_and_survive_a_backend_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(fanout, "RESTART_SECONDS", 0.01)
    backend = ScriptedBackend()
    hub = Fanout(backend)
    heard: list[tuple[str, bytes]] = []
    for channel in ("a", "b"):
        listener = await hub.join(channel)
        listener.on_payload = lambda payload, channel=channel: heard.append((channel, payload))
    broken = await hub.join("a")
    broken.on_payload = lambda payload: 1 / 0  # one failing listener: the others still hear
    receiver = asyncio.create_task(hub.receive())
    try:
        await backend.publish(b"1", ["a"])
        backend.events.put_nowait(ConnectionError("Redis restarted"))
        await backend.publish(b"2", ["b"])
        async with asyncio.timeout(5):
            while len(heard) < 2:  # noqa: ASYNC110 - the receiver has no event to wait on
                await asyncio.sleep(0.01)
        assert heard == [("a", b"1"), ("b", b"2")]
        assert not receiver.done()
    finally:
        receiver.cancel()
