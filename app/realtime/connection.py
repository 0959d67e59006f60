"""One authenticated socket: its send queue, its subscriptions and its limits.

Every frame to the client goes through one bounded queue drained by one sender task, so
frames of a thread keep their order. Replay and back-fill wait for room in the queue
(for at most `SEND_TIMEOUT`); live frames never wait: a client whose queue is full
cannot keep up and is closed with 4429, and it resumes from its last seq.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from uuid import UUID

import msgspec
from litestar.connection import WebSocket

from app.realtime.channels import RealtimeChannels
from app.realtime.events import (
    CLIENT_FRAME_TYPES,
    CLOSE_IDLE,
    CLOSE_TOO_SLOW,
    ClientFrame,
    ErrorFrame,
    Frame,
    PingFrame,
    PongFrame,
    SubscribeFrame,
    UnsubscribeFrame,
)
from app.realtime.subscription import ClientTooSlow, ThreadSubscription

logger = logging.getLogger(__name__)
SEND_TIMEOUT = 10.0
_decode_client_frame = msgspec.json.Decoder(ClientFrame).decode
_encode = msgspec.json.Encoder().encode


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
        self.socket, self.channels, self.user_id, self.settings = (
            socket,
            channels,
            user_id,
            settings,
        )
        self.subscriptions: dict[UUID, ThreadSubscription] = {}
        self._queue: asyncio.Queue[str] = asyncio.Queue(maxsize=settings.ws_send_queue_size)
        self._bucket = TokenBucket(settings.ws_frame_rate, settings.ws_frame_burst)
        self._close_code: int | None = None
        self._closing = asyncio.Event()

    # -- sending -------------------------------------------------------------------
    def push_live(self, text: str) -> None:
        try:
            self._queue.put_nowait(text)
        except asyncio.QueueFull:
            self.close(CLOSE_TOO_SLOW)

    async def send_text(self, text: str) -> None:
        try:
            async with asyncio.timeout(SEND_TIMEOUT):
                await self._queue.put(text)
        except TimeoutError:
            self.close(CLOSE_TOO_SLOW)
            raise ClientTooSlow from None

    async def send_frame(self, frame: Frame) -> None:
        await self.send_text(_encode(frame).decode())

    def close(self, code: int) -> None:
        if self._close_code is None:
            self._close_code = code
        self._closing.set()

    def abort_slow_or_broken(self) -> None:
        self.close(1011)

    def forget(self, subscription: ThreadSubscription) -> None:
        if self.subscriptions.get(subscription.thread_id) is subscription:
            del self.subscriptions[subscription.thread_id]

    async def _send_loop(self) -> None:
        while True:
            text = await self._queue.get()
            await self.socket.send_text(text)

    # -- receiving -----------------------------------------------------------------
    async def _receive_loop(self) -> None:
        while True:
            try:
                async with asyncio.timeout(self.settings.ws_idle_timeout_seconds):
                    message = await self.socket.receive()
            except TimeoutError:
                self.close(CLOSE_IDLE)
                return
            if message["type"] == "websocket.disconnect":
                return
            data = message.get("text") or message.get("bytes") or b""
            await self._handle(data)

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
        except msgspec.DecodeError as exc:
            await self._reject(data, str(exc))
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
        self.subscriptions[frame.thread_id] = ThreadSubscription(
            self, frame.thread_id, frame.after_seq
        )

    async def _reject(self, data: str | bytes, detail: str) -> None:
        try:
            raw = msgspec.json.decode(data)
        except msgspec.DecodeError:
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

    # -- lifetime ------------------------------------------------------------------
    async def serve(self) -> None:
        sender = asyncio.create_task(self._send_loop())
        receiver = asyncio.create_task(self._receive_loop())
        closing = asyncio.create_task(self._closing.wait())
        try:
            await asyncio.wait({sender, receiver, closing}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (receiver, closing):
                task.cancel()
            await asyncio.gather(*(s.stop() for s in list(self.subscriptions.values())))
            self.subscriptions.clear()
            sender.cancel()
            await asyncio.gather(sender, receiver, closing, return_exceptions=True)
        if self._close_code is not None:
            # The close frame may be stuck behind unsent data of a slow client; don't wait.
            with contextlib.suppress(Exception):
                async with asyncio.timeout(2):
                    await self.socket.close(code=self._close_code)
