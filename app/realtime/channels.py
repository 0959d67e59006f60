"""The realtime plugin: one channel per thread and one per user (their memories'
changes), and this process's listeners of them.

The memory backend serves one process (the embedded default and the tests); with
REDIS_URL set, Redis pub/sub carries frames between every server process of a
deployment. The fan-out to this process's listeners is app/realtime/fanout.py, on
Litestar's public `ChannelsBackend` interface. Frames reach a channel only after their
transaction commits: while it runs, the plugin's change sink (app/realtime/sink.py) is
registered on the threads' change port, which the writer's outbox feeds after commit.

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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from uuid import UUID

from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig
from litestar.channels.backends.base import ChannelsBackend
from litestar.channels.backends.memory import MemoryChannelsBackend
from litestar.config.app import AppConfig
from litestar.di import Provide
from litestar.events import listener
from litestar.plugins import InitPluginProtocol
from sqlalchemy.ext.asyncio import async_sessionmaker

from app.lib.background import BackgroundService
from app.memories import changes as memory_changes
from app.orchestrator.scheduling import notify
from app.realtime.events import Frame, TaskFrame
from app.realtime.fanout import Fanout, Listener
from app.realtime.redis_pubsub import RedisPubSubBackend
from app.realtime.sink import FrameSink, MemoryFrameSink
from app.realtime.store import RealtimeStore
from app.realtime.tokens import TOKEN_REVOKED, TokenWatch
from app.realtime.wire import GAP, encode_frame, encode_probe, encode_revoked, encode_wakeup
from app.settings import Settings
from app.tasks import reminders
from app.tasks.schemas import TaskRead
from app.threads import changes

if TYPE_CHECKING:
    from redis.asyncio import Redis

logger = logging.getLogger(__name__)
RETRY_SECONDS = 1.0
PING_TIMEOUT = 2.0


def build_backend(settings: Settings) -> tuple[ChannelsBackend, Redis | None]:
    if not settings.redis_url:
        return MemoryChannelsBackend(), None
    from redis.asyncio import Redis

    redis = Redis.from_url(settings.redis_url)
    return RedisPubSubBackend(redis), redis


class RealtimeChannels(InitPluginProtocol):
    """The `channels` dependency: subscribe to a thread's channel, publish to it, and what
    the socket handler needs from the app (store, token watch, settings)."""

    def __init__(self, settings: Settings, db_config: SQLAlchemyAsyncConfig) -> None:
        backend, self._redis = build_backend(settings)
        self.backend = backend
        self.fanout = Fanout(backend)
        if isinstance(backend, RedisPubSubBackend):
            backend.on_reconnect = self._on_reconnect
        self.settings = settings
        session_maker = async_sessionmaker(db_config.get_engine(), expire_on_commit=False)
        self.store = RealtimeStore(session_maker)
        self.tokens = TokenWatch(session_maker, settings.ws_token_check_seconds)
        self._prefix = settings.channels_prefix
        self._sink = FrameSink(self.relay)
        self._memory_sink = MemoryFrameSink(self.relay_to_user)
        self._outbox: deque[tuple[bytes, str]] = deque()
        self._outbox_ready: asyncio.Event | None = None
        self.control_channel = f"{self._prefix}control"
        self._control: Listener | None = None
        self._control_handlers: dict[bytes, Callable[[bytes], None]] = {}
        self._lost: set[str] = set()  # channels whose frames a failed publish dropped
        self._tasks: list[asyncio.Task[None]] = []
        self._token_check: BackgroundService | None = None
        self._resync: asyncio.Task[None] | None = None
        self._probes: dict[bytes, asyncio.Event] = {}
        self._token_cache: Any = None
        self.on_control(b"p", self._on_probe)
        self.on_control(b"x", self._on_revoked)
        self.on_control(b"w", lambda body: notify.receive(body.decode()))

    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        self._token_cache = app_config.state.get("token_cache")  # app/accounts/token_cache.py
        app_config.dependencies["channels"] = Provide(
            lambda: self, use_cache=True, sync_to_thread=False
        )
        app_config.lifespan.append(self)
        app_config.signature_namespace.update(RealtimeChannels=RealtimeChannels)
        # The revoke endpoint emits TOKEN_REVOKED (app/accounts knows no channels).
        app_config.listeners.append(listener(TOKEN_REVOKED)(self.announce_revoked))
        return app_config

    # -- subscribing and publishing ----------------------------------------------------
    def channel_for(self, thread_id: UUID) -> str:
        return f"{self._prefix}thread:{thread_id}"

    def user_channel_for(self, user_id: UUID) -> str:
        """Every socket of the user listens here (frames not of a thread: tasks, memories)."""
        return f"{self._prefix}user:{user_id}"

    @property
    def channel_names(self) -> frozenset[str]:
        """The channels this process listens to."""
        return self.fanout.channels

    async def subscribe(self, channel: str) -> Listener:
        """A listener of `channel`; set its `on_payload` to hear its events."""
        return await self.fanout.join(channel)

    async def unsubscribe(self, subscriber: Listener) -> None:
        await self.fanout.leave(subscriber)

    def publish(self, data: bytes, channel: str) -> None:
        """Send `data` to `channel`'s listeners in every process (never blocks)."""
        self._outbox.append((data, channel))
        if self._outbox_ready is not None:
            self._outbox_ready.set()

    def relay_task(self, owner_id: UUID, task: TaskRead) -> None:
        """A committed task change (app/tasks/reminders.task_listeners) to its owner's sockets."""
        self.publish(encode_frame(TaskFrame(task=task)), self.user_channel_for(owner_id))

    def relay(self, thread_id: UUID, frame: Frame) -> None:
        """The change sink's delivery: a committed frame to the thread's channel."""
        self.publish(encode_frame(frame), self.channel_for(thread_id))

    def relay_to_user(self, user_id: UUID, frame: Frame) -> None:
        """The memory sink's delivery: a committed frame to every socket of the user."""
        self.publish(encode_frame(frame), self.user_channel_for(user_id))

    async def announce_revoked(self, token_digest: str) -> None:
        """Close the token's sockets in every process (through the control channel)."""
        self.publish(encode_revoked(token_digest), self.control_channel)

    def relay_wakeup(self, payload: str) -> None:
        """Carry a runner wake-up (app/orchestrator/scheduling/notify.py) to the other processes."""
        self.publish(encode_wakeup(payload), self.control_channel)

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

    async def _relay_worker(self, ready: asyncio.Event) -> None:
        # One task publishes everything waiting together, in order, in one pipeline: one
        # event per round trip (as ChannelsPlugin publishes) queued hundreds deep in a
        # busy process and added seconds of latency.
        while True:
            with contextlib.suppress(TimeoutError):  # retry lost channels every second
                async with asyncio.timeout(RETRY_SECONDS if self._lost else None):
                    await ready.wait()
            ready.clear()
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

    async def _publish_batch(self, batch: list[tuple[bytes, str]]) -> None:
        if isinstance(self.backend, RedisPubSubBackend):
            await self.backend.publish_batch(batch)
            return
        for data, channel in batch:
            await self.backend.publish(data, [channel])

    # -- the control channel: probes of this process, revocations, wake-ups --------------
    def on_control(self, kind: bytes, handler: Callable[[bytes], None]) -> None:
        """Call `handler(body)` for every control event `<kind><body>\\n`."""
        self._control_handlers[kind] = handler

    def _on_control_payload(self, payload: bytes) -> None:
        handler = self._control_handlers.get(payload[:1])
        if handler is not None:
            handler(payload[1:].rstrip(b"\n"))

    def _on_revoked(self, digest: bytes) -> None:
        if self._token_cache is not None:
            self._token_cache.forget(digest.decode())
        self.tokens.close_sockets(digest.decode())

    async def _join_control(self) -> None:
        """Subscribe to the control channel (retrying while the backend is unreachable)."""
        while True:
            try:
                control = await self.subscribe(self.control_channel)
                break
            except Exception:
                logger.warning("subscribing to the control channel failed; retrying")
                await asyncio.sleep(RETRY_SECONDS)
        control.on_payload = self._on_control_payload
        self._control = control

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

    def _on_reconnect(self) -> None:
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
        for subscriber in self.fanout.listeners():
            if subscriber.channel != self.control_channel and subscriber.on_payload:
                subscriber.on_payload(GAP)

    # -- lifespan ------------------------------------------------------------------------
    async def __aenter__(self) -> RealtimeChannels:
        await self.backend.on_startup()
        self._outbox_ready = ready = asyncio.Event()
        ready.set()  # anything published before startup goes out at once
        self._tasks = [
            asyncio.create_task(self.fanout.receive()),
            asyncio.create_task(self._relay_worker(ready)),
            asyncio.create_task(self._join_control()),
        ]
        self._token_check = self.tokens.service()
        self._token_check.start()
        changes.register(self._sink)
        reminders.task_listeners.add(self.relay_task)
        memory_changes.register(self._memory_sink)
        if self._redis is not None:  # the memory backend reaches this process only
            notify.add_relay(self.relay_wakeup)
        return self

    async def __aexit__(self, *exc: object) -> None:
        notify.remove_relay(self.relay_wakeup)
        reminders.task_listeners.remove(self.relay_task)
        changes.unregister(self._sink)
        memory_changes.unregister(self._memory_sink)
        if self._token_check is not None:
            await self._token_check.stop()
        for task in (*self._tasks, self._resync):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._tasks, self._outbox_ready = [], None
        try:
            if self._outbox:  # committed frames still waiting: send them before leaving
                await self._publish_batch(list(self._outbox))
                self._outbox.clear()
        finally:
            await self.backend.on_shutdown()
