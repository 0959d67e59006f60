"""One thread subscription of one socket: replay from the database, then live frames.

Order of work (DESIGN.md, "the database is the truth"):
1. subscribe to the thread's channel, and wait until a probe published to it comes back,
   so the pub/sub backend (Redis acknowledges SUBSCRIBE asynchronously) is listening;
2. replay every message with seq > after_seq from the database, ascending;
3. send `subscribed` (last_seq = the highest seq delivered), then the thread's latest run;
4. forward live events, dropping any seq already sent; a gap (or a by-reference message)
   is back-filled from the database. Anything published before step 2's read is in the
   database, so events received before the probe are dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import TYPE_CHECKING
from uuid import UUID

import msgspec
from litestar.channels import Subscriber

from app.realtime.events import ErrorFrame, MessageFrame, ResetFrame, RunFrame, SubscribedFrame
from app.realtime.wire import RUN_STATUS_RANK, ChannelEvent, decode_event, encode_probe
from app.threads.serializers import message_read, run_read

if TYPE_CHECKING:
    from app.realtime.connection import Connection


class ClientTooSlow(Exception):
    """Raised by a send that waited too long for room in the socket's queue."""


logger = logging.getLogger(__name__)
_encode = msgspec.json.Encoder().encode
PAGE_SIZE = 200
PROBE_TIMEOUT = 5.0


class ThreadSubscription:
    def __init__(self, connection: Connection, thread_id: UUID, after_seq: int) -> None:
        self.connection = connection
        self.thread_id = thread_id
        self.after_seq = after_seq
        self.sent_seq = after_seq
        self._run_ranks: dict[str, int] = {}
        self.task = asyncio.create_task(self._run(), name=f"ws-sub-{thread_id}")

    async def stop(self) -> None:
        self.task.cancel()
        # Cancelled or already failed: either way it has ended.
        with contextlib.suppress(BaseException):
            await self.task

    async def _run(self) -> None:
        # Consuming the subscriber in this task is what `run_in_background` does, in one
        # task instead of two; the connection cancels it when the socket goes away, so it
        # never hangs the way `iter_events()` in a handler can.
        conn = self.connection
        store, channels = conn.channels.store, conn.channels
        try:
            last_seq = await store.thread_last_seq(self.thread_id, conn.user_id)
            if last_seq is None:
                await conn.send_frame(
                    ErrorFrame(
                        error_type="not_found", error="Thread not found.", thread_id=self.thread_id
                    )
                )
                return
            if self.after_seq > last_seq:  # a cursor from another history: refetch
                await conn.send_frame(ResetFrame(thread_id=self.thread_id, last_seq=last_seq))
                return
            async with channels.start_subscription(channels.channel_for(self.thread_id)) as sub:
                await self._await_probe(sub)
                await self._backfill()
                await conn.send_frame(
                    SubscribedFrame(thread_id=self.thread_id, last_seq=self.sent_seq)
                )
                await self._send_latest_run()
                async for payload in sub.iter_events():
                    await self._on_event(decode_event(payload))
        except ClientTooSlow:
            pass  # the connection is closing with 4429
        except Exception:
            logger.exception("subscription to thread %s failed", self.thread_id)
            conn.abort_slow_or_broken()
        finally:
            conn.forget(self)

    async def _await_probe(self, subscriber: Subscriber) -> None:
        channels = self.connection.channels
        probe = encode_probe(uuid.uuid4().hex)
        channels.publish(probe, channels.channel_for(self.thread_id))
        try:
            async with asyncio.timeout(PROBE_TIMEOUT):
                async for payload in subscriber.iter_events():
                    if payload == probe:
                        return
        except TimeoutError:  # the backend is slow or down: gaps will still be back-filled
            logger.warning("no probe echo on thread %s; continuing", self.thread_id)

    async def _backfill(self) -> None:
        """Send every change after `sent_seq` from the database, page by page."""
        while True:
            rows = await self.connection.channels.store.changes_after(
                self.thread_id, self.sent_seq, PAGE_SIZE
            )
            for row in rows:
                frame = MessageFrame(
                    thread_id=row.thread_id, seq=row.seq, message=message_read(row)
                )
                await self.connection.send_text(_encode(frame).decode())
                self.sent_seq = max(self.sent_seq, row.seq)
            if len(rows) < PAGE_SIZE:
                return

    async def _send_latest_run(self) -> None:
        run = await self.connection.channels.store.latest_run(self.thread_id)
        if run is not None:
            self._run_ranks[str(run.id)] = RUN_STATUS_RANK.get(run.status, 0)
            await self.connection.send_frame(RunFrame(thread_id=self.thread_id, run=run_read(run)))

    async def _on_event(self, event: ChannelEvent) -> None:
        if event.kind in ("m", "r"):
            if event.seq <= self.sent_seq:
                return  # already delivered (replay, back-fill, or a duplicate publish)
            if event.kind == "m" and event.seq == self.sent_seq + 1:
                self.sent_seq = event.seq
                self.connection.push_live(event.body.decode())
                return
            await self._backfill()  # a gap: a lost or reordered publish, or a big message
        elif event.kind == "R":
            run_id, _, status = event.key.partition(":")
            rank = RUN_STATUS_RANK.get(status, 0)
            if rank < self._run_ranks.get(run_id, -1):
                return  # an older state arriving late (publishes from several processes)
            self._run_ranks[run_id] = rank
            self.connection.push_live(event.body.decode())
        elif event.kind == "d":
            self.connection.push_live(event.body.decode())
