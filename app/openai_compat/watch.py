"""Following one run from the HTTP side: its text as it streams, and its end.

The runner may work in another process, so the run is followed through its thread's
channel (memory or Redis, as `/api/ws` is), and the database stays the truth: an event
lost on the way (a dropped publish, a subscription that started late, a message too big
for the channel) is made up by reading the run's rows, at least every `POLL_SECONDS`
and always at the end. Text is emitted as suffixes of what each assistant message holds,
so whatever arrives, the concatenation of the deltas is the run's final text.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any
from uuid import UUID

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db.models import Run, RunStatus
from app.openai_compat.trace import run_messages
from app.realtime.channels import RealtimeChannels
from app.realtime.events import DeltaFrame, MessageFrame
from app.realtime.fanout import Listener
from app.realtime.wire import decode_event

POLL_SECONDS = 1.0
SEPARATOR = "\n\n"  # between the texts of a run's successive assistant messages
TERMINAL = {RunStatus.COMPLETED.value, RunStatus.FAILED.value, RunStatus.CANCELLED.value}
_decode_message = msgspec.json.Decoder(MessageFrame).decode
_decode_delta = msgspec.json.Decoder(DeltaFrame).decode


class WaitTimeout(Exception):
    """The run has not ended within the wait (it continues)."""


class StepsChanged:
    """Yielded by `RunWatch.deltas` between texts: a tool cell or the plan cell of the run
    changed (a step began or ended), so its trace has something new."""


STEPS_CHANGED = StepsChanged()


class RunWatch:
    def __init__(
        self,
        channels: RealtimeChannels,
        sessions: async_sessionmaker[AsyncSession],
        run_id: UUID,
        thread_id: UUID,
    ) -> None:
        self.channels, self.sessions = channels, sessions
        self.run_id, self.thread_id = run_id, thread_id
        self.run: Run | None = None
        self._texts: dict[UUID, str] = {}  # assistant message id -> text emitted
        self._pending: list[str] = []
        self._wake = asyncio.Event()
        self._check = False  # the run may have changed: read the database
        self._steps: tuple[Any, ...] = ()  # the cells' statuses as last read
        self._steps_changed = False
        self._ended = False
        self._subscriber: Listener | None = None

    async def __aenter__(self) -> RunWatch:
        subscriber = await self.channels.subscribe(self.channels.channel_for(self.thread_id))
        subscriber.on_payload = self._on_payload
        self._subscriber = subscriber
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._subscriber is not None:
            subscriber, self._subscriber = self._subscriber, None
            subscriber.on_payload = None
            # shielded: a disconnecting client cancels us, the unsubscribe must still happen
            with contextlib.suppress(Exception):
                await asyncio.shield(self.channels.unsubscribe(subscriber))

    # -- events (called in the channels plugin's receiving task: never block or raise) ---
    def _on_payload(self, payload: bytes) -> None:
        with contextlib.suppress(Exception):
            event = decode_event(payload)
            if event.kind == "m":
                message = _decode_message(event.body).message
                if message.run_id == self.run_id:
                    self._apply(message.id, message.role, message.is_user_facing, message.content)
                    if message.role == "tool" or message.plan is not None:
                        self._check = True  # a step moved: read the cells
                        self._wake.set()
            elif event.kind == "d":
                delta = _decode_delta(event.body)
                if delta.message_id in self._texts:
                    self._emit(delta.message_id, self._texts[delta.message_id] + delta.content)
            elif (event.kind == "R" and event.key.startswith(f"{self.run_id}:")) or (
                event.kind in ("r", "g")  # too big to carry, or events lost: read the rows
            ):
                self._check = True
                self._wake.set()

    def _apply(self, message_id: UUID, role: str, facing: bool, content: str | None) -> None:
        if role == "assistant" and facing and content:
            self._emit(message_id, content)

    def _emit(self, message_id: UUID, text: str) -> None:
        if self._ended:
            return
        before = self._texts.get(message_id)
        if before is None:
            if any(self._texts.values()):
                self._pending.append(SEPARATOR)
            before = ""
        if text.startswith(before) and len(text) > len(before):
            self._pending.append(text[len(before) :])
            self._texts[message_id] = text
            self._wake.set()

    # -- the database ---------------------------------------------------------------------
    async def _sync(self) -> bool:
        """Catch up from the rows; True once the run has ended (its text all emitted)."""
        async with self.sessions() as session:
            run = await session.get(Run, self.run_id, populate_existing=True)
            assert run is not None
            rows = await run_messages(session, self.run_id)
            await session.commit()
        self.run = run
        for row in rows:
            self._apply(row.id, row.role, row.is_user_facing, row.content)
        steps = tuple(_step_state(row) for row in rows if row.role == "tool" or row.plan)
        if steps != self._steps:
            self._steps, self._steps_changed = steps, True
        return run.status in TERMINAL

    async def deltas(self, wait: float) -> AsyncIterator[str | StepsChanged]:
        """The run's text as it streams, and STEPS_CHANGED after a step of the run began or
        ended; ends when the run has ended (`self.run`), or raises WaitTimeout after
        `wait` seconds (between deltas, never inside a yield)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        done = await self._sync()
        while True:
            while self._pending:
                yield self._pending.pop(0)
            if done:
                self._ended = True
                return
            if self._steps_changed:
                self._steps_changed = False
                yield STEPS_CHANGED
            left = deadline - loop.time()
            if left <= 0:
                raise WaitTimeout
            if not self._check:
                try:
                    async with asyncio.timeout(min(POLL_SECONDS, left)):
                        await self._wake.wait()
                except TimeoutError:
                    self._check = True
            self._wake.clear()
            if self._check:
                self._check = False
                done = await self._sync()

    async def finished(self, wait: float) -> Run:
        async for _ in self.deltas(wait):
            pass
        assert self.run is not None
        return self.run


def _step_state(row: Any) -> tuple[Any, ...]:
    """What of a tool or plan cell makes a new step state: the cell's status, the plan's
    and its steps' statuses."""
    if row.plan:
        plan = row.plan
        return (row.id, plan.get("status"), *(s.get("status") for s in plan.get("steps") or []))
    return (row.id, (row.tool_activity or {}).get("status"))


def sessions_for(engine: Any) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)
