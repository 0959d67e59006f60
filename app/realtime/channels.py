"""Litestar channels wired to the message writer: one channel per thread.

The memory backend serves one process (the embedded default and the tests); with
REDIS_URL set, Redis pub/sub carries frames between every server process of a
deployment. Frames reach the channel only after their transaction commits: this plugin
listens on the process publisher, which the writer's outbox feeds after commit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from types import TracebackType
from uuid import UUID

from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig
from litestar.channels import ChannelsPlugin, Subscriber
from litestar.channels.backends.base import ChannelsBackend
from litestar.channels.backends.memory import MemoryChannelsBackend
from sqlalchemy.ext.asyncio import async_sessionmaker

from app.realtime.events import Frame
from app.realtime.publisher import InProcessPublisher, get_publisher
from app.realtime.store import RealtimeStore
from app.realtime.wire import encode_frame
from app.settings import Settings


def build_backend(settings: Settings) -> ChannelsBackend:
    if not settings.redis_url:
        return MemoryChannelsBackend()
    from litestar.channels.backends.redis import RedisChannelsPubSubBackend
    from redis.asyncio import Redis

    return RedisChannelsPubSubBackend(redis=Redis.from_url(settings.redis_url))


class RealtimeChannels(ChannelsPlugin):
    """The app's channels plugin, plus what the socket handler needs from the app."""

    def __init__(self, settings: Settings, db_config: SQLAlchemyAsyncConfig) -> None:
        super().__init__(build_backend(settings), arbitrary_channels_allowed=True)
        self.settings = settings
        self.store = RealtimeStore(
            async_sessionmaker(db_config.get_engine(), expire_on_commit=False)
        )
        self._prefix = settings.channels_prefix
        self._publisher: InProcessPublisher | None = None
        # ChannelsPlugin.unsubscribe awaits between dropping the last subscriber of a channel
        # and unsubscribing the backend; a subscribe in that window (a client reconnecting
        # while its old socket is torn down) was then left deaf. Serialise the two.
        self._membership = asyncio.Lock()

    def channel_for(self, thread_id: UUID) -> str:
        return f"{self._prefix}thread:{thread_id}"

    async def subscribe(
        self, channels: str | Iterable[str], history: int | None = None
    ) -> Subscriber:
        async with self._membership:
            return await super().subscribe(channels, history)

    async def unsubscribe(
        self, subscriber: Subscriber, channels: str | Iterable[str] | None = None
    ) -> None:
        async with self._membership:
            await super().unsubscribe(subscriber, channels)

    def relay(self, thread_id: UUID, frame: Frame) -> None:
        """Publisher listener: hand a committed frame to the thread's channel (never blocks)."""
        self.publish(encode_frame(frame), self.channel_for(thread_id))

    async def __aenter__(self) -> RealtimeChannels:
        await super().__aenter__()
        publisher = get_publisher()
        if isinstance(publisher, InProcessPublisher):
            publisher.add_listener(self.relay)
            self._publisher = publisher
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        if self._publisher is not None:
            self._publisher.remove_listener(self.relay)
            self._publisher = None
        await super().__aexit__(exc_type, exc_val, exc_tb)
