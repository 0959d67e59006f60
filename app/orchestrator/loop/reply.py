"""The assistant message of the model turn streaming right now: the only holder of it.

`start` begins a turn; `append` takes each text delta. The message is created
`GATHER_SECONDS` after the first delta, holding all the text that came by then; later
text is announced as `delta` frames, at most one per the runner's delta window (50 ms,
wider under load: delta_pace.py; a model streams a token or two per chunk: one frame each
cost the server ~0.1 ms and the phone a wake-up per token, 500 for a long answer). A reply whose stream ends sooner (a short answer, a
fast provider, text before tool calls) is never created half-written: `settle`, once the
stream ended, drops the creation that has not begun, and the turn's end writes the
message once, with its final text, in the transaction that ends the turn (one write and
one frame instead of three round trips, two writes and two frames). `write` stores the
message's final state. A turn that streamed nothing has no message.

When the model starts writing tool calls their cells come at once (preparing.py), and a
tool message must never precede the assistant message carrying its calls: `hold` stops
the message's own creation (or waits for one under way), the cells' transaction creates
it if need be, and `adopt` hands it back; later text goes out as deltas on it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Run
from app.orchestrator.loop.context import RunnerDeps
from app.orchestrator.loop.delta_pace import Paced
from app.threads import changes
from app.threads.fence import Fenced
from app.threads.records import StoredMessage
from app.threads.writer import create_message, update_message

logger = logging.getLogger(__name__)
# A few tokens at a model's pace; well below what a reader notices before the first words.
GATHER_SECONDS = 0.03


class ReplyStream:
    def __init__(self, deps: RunnerDeps, run: Run) -> None:
        self.deps, self.run = deps, run
        self.message: StoredMessage | None = None
        self.text = ""
        self._creating: asyncio.Task[None] | None = None
        self._began = False
        self._held = False  # tool calls began: the message comes with their cells
        self._sent = 0  # characters of `text` in the message or announced
        self._frames = Paced(lambda: deps.pace.window, self._announce)

    def start(self) -> None:
        self._frames.reset()
        self.message, self.text, self._creating, self._began = None, "", None, False
        self._held, self._sent = False, 0

    async def append(self, delta: str) -> None:
        self.text += delta
        if self.message is not None:
            self._frames.soon()
        elif self._creating is None and not self._held:
            self._creating = asyncio.create_task(self._create())

    def _announce(self) -> bool:
        if self.message is not None and (unsent := self.text[self._sent :]):
            changes.text_delta(self.run.thread_id, self.message.id, unsent)
            self._sent = len(self.text)
            return True
        return False

    async def _create(self) -> None:
        await asyncio.sleep(GATHER_SECONDS)
        self._began = True
        content = self.text
        # Only a new message's own fields, so one statement on PostgreSQL
        # (writer.creates_alone): no BEGIN/COMMIT round trips before the first words.
        self.message = await self.deps.write_alone(
            lambda session: create_message(
                session, self.run.thread_id, role="assistant", content=content, run_id=self.run.id
            )
        )
        self._sent = len(content)
        self._frames.soon()  # text that came while it was written

    async def hold(self) -> None:
        """Tool calls began: from now on the message is not created here. A creation not
        begun is dropped; one under way is waited for (then `message` is set, unless it
        failed). Afterwards, with `message` None, the caller creates it (with `text`)."""
        self._held = True
        task, self._creating = self._creating, None
        if task is not None and not self._began:
            task.cancel()
        elif task is not None:
            await self._finish_creation(task)

    def adopt(self, message: StoredMessage) -> None:
        """The message, created by the caller of `hold` with the text up to its content."""
        self.message = message
        self._sent = len(message.content or "")
        self._frames.soon()  # text that came while it was written

    async def _finish_creation(self, task: asyncio.Task[None]) -> None:
        try:
            await asyncio.shield(task)
        except Fenced:
            pass  # the run stops (runner.py says so, once)
        except Exception:  # the end of the turn writes the message instead
            logger.warning("run %s: creating the reply failed", self.run.id, exc_info=True)

    async def settle(self) -> None:
        """The stream ended (or broke off): a creation not begun is dropped, one under way
        finishes, text not yet announced is. Afterwards `message` is None when the message
        is still to be written."""
        task, self._creating = self._creating, None
        if task is not None and not self._began:  # still gathering: nothing was written
            task.cancel()
        elif task is not None:
            await self._finish_creation(task)
        self._frames.now()

    async def write(self, session: AsyncSession, **fields: Any) -> bool:
        """Update the streamed message in `session`; False when there is none (yet)."""
        if self.message is None:
            return False
        await update_message(session, self.message, **fields)
        return True

    async def keep_streamed_text(self, session: AsyncSession) -> None:
        """A run ending early keeps what was streamed so far (after `settle`)."""
        if self.message is None:
            if self.text:
                await create_message(
                    session, self.run.thread_id, role="assistant", content=self.text,
                    run_id=self.run.id,
                )  # fmt: skip
        elif (self.message.content or "") != self.text:  # one made with calls may hold None
            await self.write(session, content=self.text)
