"""Litestar channels wired to the message writer: one channel per thread.

The memory backend serves one process (the embedded default and the tests); with
REDIS_URL set, Redis pub/sub carries frames between every server process of a
deployment. Frames reach the channel only after their transaction commits: this plugin
listens on the process publisher, which the writer's outbox feeds after commit.

Redis pub/sub loses whatever is published while a process cannot reach it. Two ways a
subscription learns it must read the database instead of waiting for its thread's next
event: a process whose publish failed sends `g` (see wire.py) to those threads' channels
once Redis answers again, and a process whose pub/sub connection was re-established
(redis-py re-subscribes on reconnect) hands `g` to all its own subscriptions once its
probe on the control channel shows Redis is delivering again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Any
from uuid import UUID

from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig
from litestar.channels import ChannelsPlugin, Subscriber
from litestar.channels.backends.base import ChannelsBackend
from litestar.channels.backends.memory import MemoryChannelsBackend
from litestar.config.app import AppConfig
from litestar.events import listener
from sqlalchemy.ext.asyncio import async_sessionmaker

from app.orchestrator import notify
from app.realtime.events import Frame
from app.realtime.publisher import InProcessPublisher, get_publisher
from app.realtime.store import RealtimeStore
from app.realtime.subscription import CallbackSubscriber
from app.realtime.tokens import TOKEN_REVOKED, TokenWatch
from app.realtime.wire import GAP, encode_frame, encode_probe, encode_revoked, encode_wakeup
from app.settings import Settings

if TYPE_CHECKING:
    from redis.asyncio import Redis

logger = logging.getLogger(__name__)
RETRY_SECONDS = 1.0
PING_TIMEOUT = 2.0


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
        session_maker = async_sessionmaker(db_config.get_engine(), expire_on_commit=False)
        self.store = RealtimeStore(session_maker)
        self.tokens = TokenWatch(session_maker, settings.ws_token_check_seconds)
        self._prefix = settings.channels_prefix
        self._publisher: InProcessPublisher | None = None
        self._outbox: deque[tuple[bytes, str]] = deque()
        # ChannelsPlugin.unsubscribe awaits between dropping the last subscriber of a channel
        # and unsubscribing the backend; a subscribe in that window (a client reconnecting
        # while its old socket is torn down) was then left deaf. Serialise the two.
        self._membership = asyncio.Lock()
        self.control_channel = f"{self._prefix}control"
        self._control: CallbackSubscriber | None = None
        self._control_handlers: dict[bytes, Callable[[bytes], None]] = {}
        self._lost: set[str] = set()  # channels whose frames a failed publish dropped
        self._resync: asyncio.Task[None] | None = None
        self._probes: dict[bytes, asyncio.Event] = {}
        self._token_cache: Any = None
        self.on_control(b"p", self._on_probe)
        self.on_control(b"x", self._on_revoked)
        self.on_control(b"w", lambda body: notify.receive(body.decode()))

    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        self._token_cache = app_config.state.get("token_cache")  # app/accounts/token_cache.py
        # The revoke endpoint emits TOKEN_REVOKED (app/accounts knows no channels).
        app_config.listeners.append(listener(TOKEN_REVOKED)(self.announce_revoked))
        return super().on_app_init(app_config)

    def _on_revoked(self, digest: bytes) -> None:
        if self._token_cache is not None:
            self._token_cache.forget(digest.decode())
        self.tokens.close_sockets(digest.decode())

    async def announce_revoked(self, token_digest: str) -> None:
        """Close the token's sockets in every process (through the control channel)."""
        self._outbox.append((encode_revoked(token_digest), self.control_channel))
        self._outbox_ready.set()

    def relay_wakeup(self, payload: str) -> None:
        """Carry a runner wake-up (app/orchestrator/notify.py) to the other processes."""
        self._outbox.append((encode_wakeup(payload), self.control_channel))
        self._outbox_ready.set()

    async def backend_ready(self) -> bool | None:
        """Readiness (`/api/health/ready`): does Redis answer? None without Redis."""
        if self._redis is None:
            return None
        try:
            async with asyncio.timeout(PING_TIMEOUT):
                return bool(await self._redis.ping())
        except Exception:
            logger.warning("readiness: Redis unavailable", exc_info=True)
            return False

    def channel_for(self, thread_id: UUID) -> str:
        return f"{self._prefix}thread:{thread_id}"

    async def subscribe(
        self, channels: str | Iterable[str], history: int | None = None
    ) -> Subscriber:
        names = [channels] if isinstance(channels, str) else list(channels)
        async with self._membership:
            before = {name: set(self._channels.get(name, ())) for name in names}
            try:
                return await super().subscribe(names, history)
            except Exception:
                # The backend refused (Redis unreachable) after the plugin registered the
                # subscriber: forget it, or the next subscribe to the channel would skip
                # the backend and stay deaf.
                for name, kept in before.items():
                    if kept:
                        self._channels[name] = kept
                    else:
                        self._channels.pop(name, None)
                raise

    async def unsubscribe(
        self, subscriber: Subscriber, channels: str | Iterable[str] | None = None
    ) -> None:
        names = list(self._channels) if channels is None else channels
        names = [names] if isinstance(names, str) else list(names)
        async with self._membership:
            await super().unsubscribe(subscriber, names)
            # ChannelsPlugin keeps a channel's empty set for ever, and scans every set on
            # each unsubscribe: one entry per thread ever watched, a leak that also made
            # each unsubscribe slower. Forget the channels nobody watches any more.
            for name in names:
                if not self._channels.get(name, True):
                    del self._channels[name]

    def relay(self, thread_id: UUID, frame: Frame) -> None:
        """Publisher listener: hand a committed frame to the thread's channel (never blocks)."""
        self._outbox.append((encode_frame(frame), self.channel_for(thread_id)))
        self._outbox_ready.set()

    async def _relay_worker(self) -> None:
        # ChannelsPlugin publishes one event per round trip from one task; in a busy
        # process (the runner, many writers) that queue grew by hundreds and added seconds
        # of latency. Everything waiting goes out together, in order, in one pipeline.
        while True:
            with contextlib.suppress(TimeoutError):  # retry lost channels every second
                async with asyncio.timeout(RETRY_SECONDS if self._lost else None):
                    await self._outbox_ready.wait()
            self._outbox_ready.clear()
            batch = list(self._outbox)
            self._outbox.clear()
            # Subscribers of channels whose frames were dropped read the database first.
            gaps = [(GAP, channel) for channel in self._lost]
            try:
                await self._publish_batch(gaps + batch)
                self._lost.clear()
            except Exception:
                if not self._lost:  # once per outage
                    logger.exception("publishing %d frames failed", len(batch))
                self._lost.update(channel for _, channel in batch)

    async def _pub_worker(self) -> None:
        # ChannelsPlugin's publishing task (the subscription probes) ends for good on the
        # first backend error, and its queue is joined on shutdown: keep it alive.
        assert self._pub_queue is not None
        while True:
            data, channels = await self._pub_queue.get()
            try:
                await self._backend.publish(data, channels)
            except Exception:  # a lost probe: its subscription continues after a timeout
                logger.warning("publishing to %s failed", channels, exc_info=True)
            finally:
                self._pub_queue.task_done()

    async def _sub_worker(self) -> None:
        # ChannelsPlugin's receiving task ends for good on the first backend error (a Redis
        # restart); keep it alive. Events lost meanwhile are back-filled from the database
        # once the reconnected pub/sub connection delivers again (`_on_reconnect`).
        while True:
            try:
                await super()._sub_worker()
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("channels receiver failed; restarting in 1 s")
                await asyncio.sleep(1)

    # -- the control channel: probes of this process, revocations -----------------------
    def on_control(self, kind: bytes, handler: Callable[[bytes], None]) -> None:
        """Call `handler(body)` for every control event `<kind><body>\\n`."""
        self._control_handlers[kind] = handler

    def _on_control_payload(self, payload: bytes) -> None:
        handler = self._control_handlers.get(payload[:1])
        if handler is not None:
            handler(payload[1:].rstrip(b"\n"))

    async def _join_control(self) -> None:
        """Subscribe to the control channel (retrying while the backend is unreachable)."""
        while True:
            try:
                subscriber = await self.subscribe(self.control_channel)
                break
            except Exception:
                logger.warning("subscribing to the control channel failed; retrying")
                await asyncio.sleep(RETRY_SECONDS)
        assert isinstance(subscriber, CallbackSubscriber)
        subscriber.on_payload = self._on_control_payload
        self._control = subscriber
        if self._redis is not None:
            # The pub/sub connection object survives reconnects; redis-py calls this
            # after each one, once it has re-sent SUBSCRIBE for every channel.
            pub_sub = self._backend._pub_sub  # type: ignore[attr-defined]
            pub_sub.connection.register_connect_callback(self._on_reconnect)

    async def _probe_control(self) -> None:
        """Publish a probe on the control channel and wait until it comes back."""
        token = uuid.uuid4().hex.encode()
        self._probes[token] = echoed = asyncio.Event()
        try:
            await self._publish_batch([(encode_probe(token.decode()), self.control_channel)])
            async with asyncio.timeout(RETRY_SECONDS * 5):
                await echoed.wait()
        finally:
            del self._probes[token]

    def _on_probe(self, token: bytes) -> None:
        echoed = self._probes.get(token)
        if echoed is not None:
            echoed.set()

    def _on_reconnect(self, connection: object) -> None:
        # Runs inside redis-py's connect, in the receiving task: only start the work.
        if self._resync is None or self._resync.done():
            self._resync = asyncio.create_task(self._resync_after_reconnect())

    async def _resync_after_reconnect(self) -> None:
        """Once our probe comes back, every subscription reads what it missed."""
        while True:
            try:
                await self._probe_control()
                break
            except Exception:  # down again, or the echo lost: try again
                await asyncio.sleep(RETRY_SECONDS)
        logger.info("pub/sub reconnected: back-filling every subscription")
        notify.wake_all()  # runner wake-ups may have been lost too
        for channel, subscribers in list(self._channels.items()):
            if channel != self.control_channel:
                for subscriber in list(subscribers):
                    subscriber.put_nowait(GAP)

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
        self._control_task = asyncio.create_task(self._join_control())
        self._token_task = asyncio.create_task(self.tokens.run())
        publisher = get_publisher()
        if isinstance(publisher, InProcessPublisher):
            publisher.add_listener(self.relay)
            self._publisher = publisher
        if self._redis is not None:  # the memory backend reaches this process only
            notify.add_relay(self.relay_wakeup)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        notify.remove_relay(self.relay_wakeup)
        if self._publisher is not None:
            self._publisher.remove_listener(self.relay)
            self._publisher = None
        for task in (self._relay_task, self._control_task, self._token_task, self._resync):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self._outbox:  # committed frames still waiting: send them before leaving
            await self._publish_batch(list(self._outbox))
            self._outbox.clear()
        await super().__aexit__(exc_type, exc_val, exc_tb)
