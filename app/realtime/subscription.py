"""One thread subscription of one socket: replay from the database, then live frames.

Order of work (DESIGN.md, "the database is the truth"):
1. subscribe to the thread's channel, and wait until a probe published to it comes back,
   so the pub/sub backend (Redis acknowledges SUBSCRIBE asynchronously) is listening;
   events before the probe are dropped: they were committed before step 2 reads;
2. in one short session, check the thread is the user's and read its last_seq (and
   leaf), every message with seq > after_seq up to it (ascending; none to read when
   after_seq is last_seq) and its latest run; replay the messages, then a `branch` frame
   when some seq replayed is no row's (a leaf move: app/threads/writer.py, move_leaf);
3. send `subscribed` (last_seq: the thread's, as read: every seq up to it delivered), then
   the thread's latest run;
4. forward live events, dropping any seq already sent; a gap (or a by-reference message)
   is back-filled from the database while later events wait in a buffer;
5. a `g` event (events may have been lost while Redis was unreachable) back-fills
   likewise and sends the latest run again, without waiting for the thread's next event.

Live events arrive through a callback (a fan-out `Listener`), not a queue and a task per
subscription: an idle subscription costs a few small objects, and a task exists only
while a replay or back-fill reads the database. A subscription knows its socket only
through `SocketCallbacks` (as litestar's `Subscriber.run_in_background` knows only its
`EventCallback`), and reads from a `Source` (channels plugin, channel name, store).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from uuid import UUID

import msgspec

from app.db.models import Run, ThreadMessage
from app.observability import metrics
from app.push import presence
from app.realtime.events import (
    BranchFrame,
    ErrorFrame,
    Frame,
    MessageFrame,
    ResetFrame,
    RunFrame,
    SubscribedFrame,
)
from app.realtime.store import CatchUp, Changes, RealtimeStore
from app.realtime.wire import RUN_STATUS_RANK, ChannelEvent, decode_event, encode_probe
from app.threads.serializers import message_read, run_read

if TYPE_CHECKING:
    from app.realtime.channels import RealtimeChannels
    from app.realtime.fanout import Listener

logger = logging.getLogger(__name__)
_encode = msgspec.json.Encoder().encode
# A page's rows are turned into frames on the event loop in one stretch, during which every
# other socket and run of the process waits: a small page keeps that stretch short
# (`bench.looplag`, back-fill of a long thread).
PAGE_SIZE = 50
PROBE_TIMEOUT = 5.0


class ClientTooSlow(Exception):
    """Raised by a send that waited too long for room in the socket's queue."""


def _unsubscribe_later(channels: RealtimeChannels, done: asyncio.Future[Listener]) -> None:
    if not done.cancelled() and done.exception() is None:
        task = asyncio.ensure_future(channels.unsubscribe(done.result()))
        _background.add(task)
        task.add_done_callback(_background.discard)


_background: set[asyncio.Future[Any]] = set()


@dataclass(frozen=True, slots=True)
class SocketCallbacks:
    """What a subscription may do to its socket."""

    send: Callable[[str], Awaitable[None]]  # queue a frame, waiting for room (ClientTooSlow)
    push_live: Callable[[str], None]  # queue a live frame, never waiting
    forget: Callable[[ThreadSubscription], None]  # the subscription ended by itself
    abort: Callable[[], None]  # something broke: close the socket (1011)


@dataclass(frozen=True, slots=True)
class Source:
    """Where a subscription reads from: the thread's channel and the database."""

    channels: RealtimeChannels
    channel: str
    store: RealtimeStore
    user_id: UUID


class ThreadSubscription:
    def __init__(
        self, socket: SocketCallbacks, source: Source, thread_id: UUID, after_seq: int
    ) -> None:
        self.socket = socket
        self.source = source
        self.thread_id = thread_id
        self.after_seq = after_seq
        self.sent_seq = after_seq
        self._run_ranks: dict[str, int] = {}
        self._subscriber: Listener | None = None
        self._probe: bytes | None = None
        self._probe_seen: asyncio.Event | None = None
        self._buffer: list[bytes] | None = []  # not None while replaying or back-filling
        self._present = False
        self.task: asyncio.Task[None] | None = asyncio.create_task(self._start())

    async def stop(self) -> None:
        if self._present:
            self._present = False
            presence.leave(self.source.user_id, self.thread_id)
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(BaseException):  # cancelled or already failed: it ended
                await self.task
        await self._unlisten()

    async def _unlisten(self) -> None:
        if self._subscriber is not None:
            subscriber, self._subscriber = self._subscriber, None
            metrics.subscription_ended()
            subscriber.on_payload = None
            await self.source.channels.unsubscribe(subscriber)

    async def _send_frame(self, frame: Frame) -> None:
        await self.socket.send(_encode(frame).decode())

    async def _start(self) -> None:
        source = self.source
        try:
            await self._listen()
            view = await source.store.catch_up(
                self.thread_id, source.user_id, self.after_seq, PAGE_SIZE
            )
            if view is None or self.after_seq > view.last_seq:
                await self._unlisten()
                self.socket.forget(self)
                await self._send_frame(self._refusal(view))
                return
            await self._replay(view)
            # Watching from here on: pushes for this thread are held back (app/push).
            presence.enter(source.user_id, self.thread_id)
            self._present = True
            await self._send_frame(
                SubscribedFrame(thread_id=self.thread_id, last_seq=self.sent_seq)
            )
            if view.run is not None:
                await self._send_run(view.run)
            self._go_live()
        except ClientTooSlow:
            pass  # the connection is closing with 4429
        except Exception:
            logger.exception("subscription to thread %s failed", self.thread_id)
            self.socket.abort()

    def _refusal(self, view: CatchUp | None) -> Frame:
        if view is None:
            return ErrorFrame(
                error_type="not_found", error="Thread not found.", thread_id=self.thread_id
            )
        # a cursor from another history (ahead of the thread): the client refetches
        return ResetFrame(thread_id=self.thread_id, last_seq=view.last_seq)

    async def _listen(self) -> None:
        """Subscribe, then wait for our own probe to come back through the backend."""
        channels, channel = self.source.channels, self.source.channel
        self._probe, self._probe_seen = encode_probe(uuid.uuid4().hex), asyncio.Event()
        pending = asyncio.ensure_future(channels.subscribe(channel))
        try:
            subscriber = await asyncio.shield(pending)
        except asyncio.CancelledError:  # stopped mid-subscribe: don't leak the subscriber
            pending.add_done_callback(lambda done: _unsubscribe_later(channels, done))
            raise
        self._subscriber = subscriber
        metrics.subscription_started()
        subscriber.on_payload = self._on_payload
        channels.publish(self._probe, channel)
        try:
            async with asyncio.timeout(PROBE_TIMEOUT):
                await self._probe_seen.wait()
        except TimeoutError:  # the backend is slow or down: gaps will still be back-filled
            logger.warning("no probe echo on thread %s; continuing", self.thread_id)
        self._probe, self._probe_seen = None, None

    def _on_payload(self, payload: bytes) -> None:
        # Runs in the channels plugin's receiving task, for every subscriber: never block,
        # never raise.
        try:
            if self._probe is not None:
                if payload == self._probe and self._probe_seen is not None:
                    self._probe_seen.set()
                    self._probe = None
                return  # before our probe: the replay that follows has it
            if self._buffer is not None:
                self._buffer.append(payload)
                return
            self._handle(decode_event(payload))
        except Exception:
            logger.exception("forwarding an event of thread %s failed", self.thread_id)
            self.socket.abort()

    def _handle(self, event: ChannelEvent) -> None:
        if event.kind in ("m", "b", "r"):
            if event.seq <= self.sent_seq:
                return  # already delivered (replay, back-fill, or a duplicate publish)
            if event.kind in ("m", "b") and event.seq == self.sent_seq + 1:
                self.sent_seq = event.seq
                self.socket.push_live(event.body.decode())
                return
            # a gap (a lost or reordered publish) or a message too big to carry
            self._buffer = []
            self.task = asyncio.create_task(self._backfill_then_go_live())
        elif event.kind == "R":
            run_id, _, status = event.key.partition(":")
            rank = RUN_STATUS_RANK.get(status, 0)
            if rank < self._run_ranks.get(run_id, -1):
                return  # an older state arriving late (publishes from several processes)
            self._run_ranks[run_id] = rank
            self.socket.push_live(event.body.decode())
        elif event.kind == "d":
            self.socket.push_live(event.body.decode())
        elif event.kind == "g":
            self._buffer = []
            self.task = asyncio.create_task(self._backfill_then_go_live(with_run=True))

    def _go_live(self) -> None:
        """Forward what waited in the buffer, then events as they come."""
        waiting, self._buffer = self._buffer or [], None
        self.task = None
        for index, payload in enumerate(waiting):
            self._handle(decode_event(payload))
            if self._buffer is not None:  # a gap started another back-fill
                self._buffer[:0] = waiting[index + 1 :]
                return

    async def _backfill_then_go_live(self, with_run: bool = False) -> None:
        metrics.backfill("reconnect" if with_run else "gap")
        try:
            await self._replay(await self._changes())
            if with_run:  # a run's change may have been lost too
                await self._send_latest_run()
            self._go_live()
        except ClientTooSlow:
            pass
        except Exception:
            logger.exception("back-fill of thread %s failed", self.thread_id)
            self.socket.abort()

    async def _changes(self) -> Changes:
        return await self.source.store.changes_after(self.thread_id, self.sent_seq, PAGE_SIZE)

    async def _replay(self, changes: Changes) -> None:
        """Send every change after `sent_seq` from the database, page by page, then the
        leaf as of the last page's `last_seq` if a seq up to it is held by no row sent:
        a leaf move (its own seq, no row), or a row rewritten since (harmless)."""
        start, sent = self.sent_seq, 0
        while True:
            await self._send_messages(changes.messages)
            sent += len(changes.messages)
            if changes.complete:
                break
            changes = await self._changes()
        if sent < changes.last_seq - start:
            frame = BranchFrame(
                thread_id=self.thread_id,
                seq=changes.last_seq,
                current_leaf_id=changes.leaf_id,
                deleted_message_ids=[],
            )
            await self._send_frame(frame)
        self.sent_seq = max(self.sent_seq, changes.last_seq)

    async def _send_messages(self, rows: list[ThreadMessage]) -> None:
        for row in rows:
            frame = MessageFrame(thread_id=row.thread_id, seq=row.seq, message=message_read(row))
            await self.socket.send(_encode(frame).decode())
            self.sent_seq = max(self.sent_seq, row.seq)

    async def _send_latest_run(self) -> None:
        run = await self.source.store.latest_run(self.thread_id)
        if run is not None:
            await self._send_run(run)

    async def _send_run(self, run: Run) -> None:
        self._run_ranks[str(run.id)] = RUN_STATUS_RANK.get(run.status, 0)
        await self._send_frame(RunFrame(thread_id=self.thread_id, run=run_read(run)))
