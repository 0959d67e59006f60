"""This process's listeners of each channel, fed by one task reading a channels backend.

Litestar's `ChannelsPlugin` gives every subscriber a queue and a task, publishes from one
task that dies on its first backend error, and keeps every channel ever watched; its
fan-out could only be changed through its private members. This one stands on the
public `ChannelsBackend` interface alone (`subscribe`, `unsubscribe`, `stream_events`):
a listener is a callback (an idle subscription costs one small object), a channel is
unsubscribed from the backend when its last listener leaves, and the receiving task
outlives backend errors.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from litestar.channels.backends.base import ChannelsBackend

logger = logging.getLogger(__name__)
RESTART_SECONDS = 1.0


class Listener:
    """One subscriber of one channel: each payload goes to `on_payload` (None: dropped).

    `on_payload` runs in the receiving task, for every listener of the channel: it must
    not block, and should not raise (an exception is logged and the others still hear).
    """

    __slots__ = ("channel", "on_payload")

    def __init__(self, channel: str) -> None:
        self.channel = channel
        self.on_payload: Callable[[bytes], None] | None = None


class Fanout:
    def __init__(self, backend: ChannelsBackend) -> None:
        self.backend = backend
        self._listeners: dict[str, set[Listener]] = {}
        # Serialises joining and leaving: a subscribe while the last listener's leave
        # awaits the backend's unsubscribe (a client reconnecting while its old socket is
        # torn down) would otherwise be left deaf.
        self._membership = asyncio.Lock()

    @property
    def channels(self) -> frozenset[str]:
        """The channels some listener of this process watches."""
        return frozenset(self._listeners)

    def listeners(self) -> list[Listener]:
        return [listener for group in self._listeners.values() for listener in group]

    async def join(self, channel: str) -> Listener:
        """A new listener of `channel` (the backend subscribes to it for the first one)."""
        listener = Listener(channel)
        async with self._membership:
            group = self._listeners.setdefault(channel, set())
            group.add(listener)
            if len(group) == 1:
                try:
                    await self.backend.subscribe([channel])
                except BaseException:  # refused (Redis unreachable): nobody listens
                    del self._listeners[channel]
                    raise
        return listener

    async def leave(self, listener: Listener) -> None:
        """Stop `listener` (the backend unsubscribes when it was the channel's last)."""
        listener.on_payload = None
        async with self._membership:
            group = self._listeners.get(listener.channel)
            if group is None or listener not in group:
                return
            group.discard(listener)
            if not group:  # forget the channel: one entry per thread ever watched leaked
                del self._listeners[listener.channel]
                await self.backend.unsubscribe([listener.channel])

    def deliver(self, channel: str, payload: bytes) -> None:
        for listener in list(self._listeners.get(channel, ())):
            callback = listener.on_payload
            if callback is None:
                continue
            try:
                callback(payload)
            except Exception:
                logger.exception("a listener of %s failed", channel)

    async def receive(self) -> None:
        """Deliver the backend's events until cancelled, restarting after a backend error
        (a Redis restart); what is lost meanwhile is back-filled by the subscriptions."""
        while True:
            try:
                async for channel, payload in self.backend.stream_events():
                    self.deliver(channel, payload)
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("channels receiver failed; restarting in %s s", RESTART_SECONDS)
                await asyncio.sleep(RESTART_SECONDS)
