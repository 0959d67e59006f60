"""Redis pub/sub as a Litestar channels backend, on redis-py's public API.

Litestar's `RedisChannelsPubSubBackend` keeps its `PubSub` private, and a process must
know when that connection was re-established (redis-py subscribes again by itself; what
was published meanwhile is lost, app/realtime/channels.py back-fills it). This backend
owns its `PubSub` and calls `on_reconnect` after each reconnect. Publishing goes through
one pipeline (no Lua script, no atomicity across channels: each frame names one).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Iterable
from typing import TYPE_CHECKING, Any

from litestar.channels.backends.base import ChannelsBackend

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.asyncio.connection import Connection

POLL_SECONDS = 1.0  # get_message's wait before looking again (also bounds shutdown)


class RedisPubSubBackend(ChannelsBackend):
    def __init__(self, redis: Redis) -> None:
        self.redis = redis
        self.pub_sub = redis.pubsub()
        self.on_reconnect: Callable[[], None] | None = None
        self._watching: asyncio.Event | None = None  # made on the running loop
        self._hooked: Connection | None = None

    @property
    def watching(self) -> asyncio.Event:
        if self._watching is None:
            self._watching = asyncio.Event()
        return self._watching

    async def on_startup(self) -> None:
        pass

    async def on_shutdown(self) -> None:
        await self.pub_sub.aclose()

    async def subscribe(self, channels: Iterable[str]) -> None:
        await self.pub_sub.subscribe(*channels)
        self._hook_reconnects()
        self.watching.set()

    async def unsubscribe(self, channels: Iterable[str]) -> None:
        await self.pub_sub.unsubscribe(*channels)
        if not self._subscribed():
            self.watching.clear()

    async def publish(self, data: bytes, channels: Iterable[str]) -> None:
        await self.publish_batch([(data, channel) for channel in channels])

    async def publish_batch(self, batch: list[tuple[bytes, str]]) -> None:
        """Every (data, channel) in order, in one round trip."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for data, channel in batch:
                pipe.publish(channel, data)
            await pipe.execute()

    async def stream_events(self) -> AsyncGenerator[tuple[str, Any], None]:
        while True:
            await self.watching.wait()
            message = await self.pub_sub.get_message(
                ignore_subscribe_messages=True, timeout=POLL_SECONDS
            )
            if message is None:
                continue
            channel = message["channel"]
            if channel in self._subscribed():  # not one being unsubscribed
                yield channel.decode(), message["data"]

    async def get_history(self, channel: str, limit: int | None = None) -> list[bytes]:
        raise NotImplementedError("Redis pub/sub keeps no history")

    def _subscribed(self) -> set[bytes]:
        return set(self.pub_sub.channels) - set(self.pub_sub.pending_unsubscribe_channels)

    def _hook_reconnects(self) -> None:
        # The pub/sub connection object survives reconnects, and redis-py calls its connect
        # callbacks after each one, once it has re-sent SUBSCRIBE for every channel.
        connection = self.pub_sub.connection
        if connection is not None and connection is not self._hooked:
            connection.register_connect_callback(self._reconnected)
            self._hooked = connection

    def _reconnected(self, connection: Connection) -> None:
        if self.on_reconnect is not None:
            self.on_reconnect()
