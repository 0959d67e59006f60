"""Litestar channels wired to the message writer: one channel per thread.

The memory backend serves one process (the embedded default and the tests); with
REDIS_URL set, Redis pub/sub carries frames between every server process of a
deployment. Frames reach the channel only after their transaction commits: this plugin
listens on the process publisher, which the writer's outbox feeds after commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Iterable
from types import TracebackType
from typing import TYPE_CHECKING
from uuid import UUID

from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig
from litestar.channels import ChannelsPlugin, Subscriber
from litestar.channels.backends.base import ChannelsBackend
from litestar.channels.backends.memory import MemoryChannelsBackend
from sqlalchemy.ext.asyncio import async_sessionmaker

from app.realtime.events import Frame
from app.realtime.publisher import InProcessPublisher, get_publisher
from app.realtime.store import RealtimeStore
from app.realtime.subscription import CallbackSubscriber
from app.realtime.wire import encode_frame
from app.settings import Settings

if TYPE_CHECKING:
    from redis.asyncio import Redis

logger = logging.getLogger(__name__)


def build_backend(settings: Settings) -> tuple[ChannelsBackend, Redis | None]:
    if not settings.redis_url:
        return MemoryChannelsBackend(), None
    from litestar.channels.backends.redis import RedisChannelsPubSubBackend
    from redis.asyncio import Redis

    redis = Redis.from_url(settings.redis_url)
    return RedisChannelsPubSubBackend(redis=redis), redis


class RealtimeChannels(ChannelsPlugin):
    """The app's channels plugin, plus what the socket handler needs from the app."""

    def __init__(self, settings: Settings, db_config: SQLAlchemyAsyncConfig) -> None:
        backend, self._redis = build_backend(settings)
        super().__init__(
            backend, arbitrary_channels_allowed=True, subscriber_class=CallbackSubscriber
        )
        self.settings = settings
        self.store = RealtimeStore(
            async_sessionmaker(db_config.get_engine(), expire_on_commit=False)
        )
        self._prefix = settings.channels_prefix
        self._publisher: InProcessPublisher | None = None
        self._outbox: deque[tuple[bytes, str]] = deque()
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
        self._outbox.append((encode_frame(frame), self.channel_for(thread_id)))
        self._outbox_ready.set()

    async def _relay_worker(self) -> None:
        # ChannelsPlugin publishes one event per round trip from one task; in a busy
        # process (the runner, many writers) that queue grew by hundreds and added seconds
        # of latency. Everything waiting goes out together, in order, in one pipeline.
        while True:
            await self._outbox_ready.wait()
            self._outbox_ready.clear()
            batch = list(self._outbox)
            self._outbox.clear()
            try:
                await self._publish_batch(batch)
            except Exception:  # subscribers back-fill gaps from the database
                logger.exception("publishing %d frames failed", len(batch))

    async def _sub_worker(self) -> None:
        # ChannelsPlugin's receiving task ends for good on the first backend error (a Redis
        # restart); keep it alive. Events lost meanwhile are back-filled from the database
        # by each subscription when the thread's next event shows the gap.
        while True:
            try:
                await super()._sub_worker()
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("channels receiver failed; restarting in 1 s")
                await asyncio.sleep(1)

    async def _publish_batch(self, batch: list[tuple[bytes, str]]) -> None:
        if self._redis is None:
            for data, channel in batch:
                await self._backend.publish(data, [channel])
            return
        async with self._redis.pipeline(transaction=False) as pipe:
            for data, channel in batch:
                pipe.publish(channel, data)
            await pipe.execute()

    async def __aenter__(self) -> RealtimeChannels:
        await super().__aenter__()
        self._outbox_ready = asyncio.Event()
        self._relay_task = asyncio.create_task(self._relay_worker())
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
        self._relay_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._relay_task
        if self._outbox:  # committed frames still waiting: send them before leaving
            await self._publish_batch(list(self._outbox))
            self._outbox.clear()
        await super().__aexit__(exc_type, exc_val, exc_tb)
