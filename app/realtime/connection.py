"""One authenticated socket: its send queue, its subscriptions and its limits.

Every frame to the client goes through one bounded queue drained by one sender task
(started when there is something to send, gone when idle), so frames of a thread keep
their order. Replay and back-fill wait for room in the queue (for at most
`SEND_TIMEOUT`); live frames never wait: a client whose queue is full cannot keep up and
is closed with 4429, and it resumes from its last seq.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections import deque
from uuid import UUID

import msgspec
from litestar.connection import WebSocket
from litestar.types import ReceiveMessage

from app.db.errors import database_unavailable_now
from app.observability import metrics
from app.realtime.channels import RealtimeChannels
from app.realtime.events import (
    CLIENT_FRAME_TYPES,
    CLOSE_IDLE,
    CLOSE_TOO_SLOW,
    CLOSE_UNAUTHORIZED,
    ClientFrame,
    ErrorFrame,
    Frame,
    MemoryFrame,
    PingFrame,
    PongFrame,
    SubscribeFrame,
    UnsubscribeFrame,
)
from app.realtime.fanout import Listener
from app.realtime.pings import client_pings
from app.realtime.subscription import ClientTooSlow, SocketCallbacks, Source, ThreadSubscription
from app.realtime.wire import decode_event

logger = logging.getLogger(__name__)
SEND_TIMEOUT = 10.0
_decode_client_frame = msgspec.json.Decoder(ClientFrame).decode
_encode = msgspec.json.Encoder().encode
_STALE_MEMORIES = _encode(MemoryFrame(change="stale")).decode()
# What a hostile frame can raise while decoding: besides malformed JSON, deep nesting
# (msgspec recurses; a 4 KB `[[[[…` passes Python's recursion limit) and invalid UTF-8
# in a binary frame.
_UNDECODABLE = (msgspec.DecodeError, RecursionError, UnicodeDecodeError)


def _reason(exc: Exception) -> str:
    if isinstance(exc, RecursionError):
        return "JSON is nested too deeply."
    if isinstance(exc, UnicodeDecodeError):
        return "Frame is not valid UTF-8."
    return str(exc)


# This process's open connections, for /metrics' send-queue gauges (read at each scrape).
_open: weakref.WeakSet[Connection] = weakref.WeakSet()


def _queued() -> float:
    return float(sum(connection.queued for connection in list(_open)))


def _deepest() -> float:
    return float(max((connection.queued for connection in list(_open)), default=0))


class TokenBucket:
    def __init__(self, rate: float, burst: int) -> None:
        self.rate, self.capacity = rate, float(burst)
        self.tokens, self.stamp = float(burst), time.monotonic()

    def take(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


class Connection:
    def __init__(self, socket: WebSocket, channels: RealtimeChannels, user_id: UUID) -> None:
        settings = channels.settings
        self.socket = socket
        self.channels = channels
        self.user_id = user_id
        self.settings = settings
        self.subscriptions: dict[UUID, ThreadSubscription] = {}
        self._outbox: deque[str] = deque()
        self._sender: asyncio.Task[None] | None = None
        self._room: asyncio.Event | None = None  # set when the sender takes a frame out
        self._bucket = TokenBucket(settings.ws_frame_rate, settings.ws_frame_burst)
        self._close_code: int | None = None
        self._closing = False
        self._task: asyncio.Task[None] | None = None
        self._pings = client_pings(socket.scope)
        _open.add(self)
        metrics.watch_send_queues(_queued, _deepest, settings.ws_send_queue_size)
        self._callbacks = SocketCallbacks(
            send=self.send_text,
            push_live=self.push_live,
            forget=self.forget,
            abort=self.abort_slow_or_broken,
        )

    # -- sending -------------------------------------------------------------------
    @property
    def queued(self) -> int:
        """Frames waiting in this socket's send queue."""
        return len(self._outbox)

    def push_live(self, text: str) -> None:
        if len(self._outbox) >= self.settings.ws_send_queue_size:
            self.close(CLOSE_TOO_SLOW)
            return
        self._outbox.append(text)
        self._start_sender()

    async def send_text(self, text: str) -> None:
        """Queue a frame, waiting for room (replay, back-fill, answers to the client)."""
        while len(self._outbox) >= self.settings.ws_send_queue_size:
            self._room = self._room or asyncio.Event()
            self._room.clear()
            try:
                async with asyncio.timeout(SEND_TIMEOUT):
                    await self._room.wait()
            except TimeoutError:
                self.close(CLOSE_TOO_SLOW)
                raise ClientTooSlow from None
        self._outbox.append(text)
        self._start_sender()

    def _start_sender(self) -> None:
        if self._sender is None and not self._closing:
            self._sender = asyncio.create_task(self._send_loop())

    async def send_frame(self, frame: Frame) -> None:
        await self.send_text(_encode(frame).decode())

    def close(self, code: int | None) -> None:
        """End the connection (with `code`, or None when the client is already gone)."""
        if self._closing:
            return
        self._closing = True
        self._close_code = code
        if self._task is not None and self._task is not asyncio.current_task():
            self._task.cancel()

    def close_unauthorized(self) -> None:
        self.close(CLOSE_UNAUTHORIZED)

    def abort_slow_or_broken(self) -> None:
        """Close after a failure (called in an `except` block): 4429 when the database is
        unavailable right now (the client resumes from its last seq later), else 1011."""
        self.close(CLOSE_TOO_SLOW if database_unavailable_now() else 1011)

    def forget(self, subscription: ThreadSubscription) -> None:
        if self.subscriptions.get(subscription.thread_id) is subscription:
            del self.subscriptions[subscription.thread_id]

    async def _send_loop(self) -> None:
        try:
            while self._outbox:
                text = self._outbox.popleft()
                if self._room is not None:
                    self._room.set()
                await self.socket.send_text(text)
                metrics.frame_sent()
        except Exception:  # the client is gone
            self.close(None)
        finally:
            self._sender = None

    def _on_user_payload(self, payload: bytes) -> None:
        """A frame for every socket of this user (`d\n<json>`: a task changed)."""
        head, _, body = payload.partition(b"\n")
        if head == b"d" and body and not self._closing:
            self.push_live(body.decode())

    # -- receiving -----------------------------------------------------------------
    async def _receive_loop(self) -> None:
        while True:
            message = await self._receive_unless_idle()
            if message is None:
                self._close_code, self._closing = CLOSE_IDLE, True
                return
            if message["type"] == "websocket.disconnect":
                return
            data = message.get("text") or message.get("bytes") or b""
            await self._handle(data if isinstance(data, str | bytes) else b"")

    async def _receive_unless_idle(self) -> ReceiveMessage | None:
        """The next client message, or None once the client was idle for the idle timeout.

        A protocol ping counts as activity when the server reports pings (pings.py).
        """
        idle = self.settings.ws_idle_timeout_seconds
        loop = asyncio.get_running_loop()
        active = loop.time()
        while True:
            try:
                async with asyncio.timeout_at(active + idle):
                    return await self.socket.receive()  # cancelling it loses nothing
            except TimeoutError:
                pinged = self._pings.last if self._pings is not None else None
                if pinged is None or pinged <= active:
                    return None
                active = pinged

    async def _handle(self, data: str | bytes) -> None:
        if len(data) > self.settings.ws_max_frame_bytes:
            await self._error(
                "limit", f"Frames are limited to {self.settings.ws_max_frame_bytes} bytes."
            )
            return
        if not self._bucket.take():
            await self._error("limit", "Too many frames; slow down.")
            return
        try:
            frame = _decode_client_frame(data)
        except _UNDECODABLE as exc:
            await self._reject(data, _reason(exc))
            return
        if isinstance(frame, PingFrame):
            await self.send_frame(PongFrame())
        elif isinstance(frame, SubscribeFrame):
            await self._subscribe(frame)
        elif isinstance(frame, UnsubscribeFrame):
            subscription = self.subscriptions.pop(frame.thread_id, None)
            if subscription is not None:
                await subscription.stop()

    async def _subscribe(self, frame: SubscribeFrame) -> None:
        previous = self.subscriptions.pop(frame.thread_id, None)
        if previous is not None:  # a re-subscribe restarts from the new cursor
            await previous.stop()
        elif len(self.subscriptions) >= self.settings.ws_max_subscriptions:
            limit = self.settings.ws_max_subscriptions
            await self._error(
                "limit", f"At most {limit} subscriptions per socket.", frame.thread_id
            )
            return
        source = Source(
            channels=self.channels,
            channel=self.channels.channel_for(frame.thread_id),
            store=self.channels.store,
            user_id=self.user_id,
        )
        self.subscriptions[frame.thread_id] = ThreadSubscription(
            self._callbacks, source, frame.thread_id, frame.after_seq
        )

    async def _reject(self, data: str | bytes, detail: str) -> None:
        try:
            raw = msgspec.json.decode(data)
        except _UNDECODABLE:
            raw = None
        kind = raw.get("type") if isinstance(raw, dict) else None
        if isinstance(kind, str) and kind not in CLIENT_FRAME_TYPES:
            await self.send_frame(
                ErrorFrame(
                    error_type="unknown_type",
                    error=f"Unknown frame type {kind[:50]!r}.",
                    allowed_types=list(CLIENT_FRAME_TYPES),
                )
            )
            return
        await self._error("bad_frame", detail[:300])

    async def _error(self, error_type: str, error: str, thread_id: UUID | None = None) -> None:
        await self.send_frame(ErrorFrame(error_type=error_type, error=error, thread_id=thread_id))  # type: ignore[arg-type]

    # -- the user's channel: frames of no thread (memories) --------------------------
    def _on_user_payload(self, payload: bytes) -> None:
        # Runs in the fan-out's receiving task: never block, never raise.
        event = decode_event(payload)
        if event.kind == "d":
            self.push_live(event.body.decode())
        elif event.kind == "g":  # publishes were lost: the client refetches
            self.push_live(_STALE_MEMORIES)

    async def _join_user_channel(self) -> Listener | None:
        try:
            listener = await self.channels.subscribe(self.channels.user_channel_for(self.user_id))
        except Exception:  # the backend is down: thread subscriptions still back-fill
            logger.warning("joining a user's channel failed; no memory frames", exc_info=True)
            return None
        listener.on_payload = self._on_user_payload
        return listener

    # -- lifetime ------------------------------------------------------------------
    async def serve(self) -> None:
        """Receive in this task, send in another; `close()` cancels this one."""
        self._task = asyncio.current_task()
        user_listener = None
        try:
            user_listener = await self._join_user_channel()
            await self._receive_loop()
        except ClientTooSlow:
            pass  # an answer to the client could not be queued: closing with 4429
        except asyncio.CancelledError:
            if not self._closing or self._task is None or self._task.uncancel():
                raise  # cancelled from outside (server shutdown), not by close()
        finally:
            self._closing = True
            if user_listener is not None:
                user_listener.on_payload = None
                await self.channels.unsubscribe(user_listener)
            await asyncio.gather(*(s.stop() for s in list(self.subscriptions.values())))
            self.subscriptions.clear()
            if self._sender is not None:
                self._sender.cancel()
                await asyncio.gather(self._sender, return_exceptions=True)
        if self._close_code is not None:
            # The close frame may be stuck behind unsent data of a slow client; don't wait.
            with contextlib.suppress(Exception):
                async with asyncio.timeout(2):
                    await self.socket.close(code=self._close_code)
