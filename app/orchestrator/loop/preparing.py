"""The tool calls of the model turn streaming now, shown while the model writes them.

When the model begins a tool call (its name is known), the call gets its cell at once:
`preparing`, the tool's name, its preparing message ("Preparing tasks…"), no input yet.
Its arguments go out as they stream, as `tool_arguments` frames coalesced like a reply's
text (at most one frame per call per delta window, delta_pace.py; the rest just before
the turn is recorded). Once the model has written the turn, the call plan updates each
prepared cell (same message, same tool_call_id) to `in_progress` or a wait, as it creates
the cells of calls that came whole (tool_calls.py).

The cells are created `GATHER_SECONDS` after the first call appeared, every call known
by then, in one transaction with the assistant message that carries them: created there
if the reply has not created it yet, so that no tool message ever comes before it (the
history and the pages order by position), and the calls written on it (arguments `{}`
until the turn is recorded: a run that ends meanwhile leaves a valid conversation). That
is the one write a model turn adds: a call that begins after it (the second of parallel
calls a model writes one after the other) gets its cell when the turn is recorded, as
today (one write per such call more would show it sooner: about 6% more instructions per
turn with two streamed calls in `bench.turn`). A turn whose calls come whole or fast (the
stream ends within `GATHER_SECONDS`) writes nothing here, and a turn without calls costs
nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Run
from app.orchestrator.door.types import StreamedCall
from app.orchestrator.loop import deadlines
from app.orchestrator.loop.call_plan import preparing_row
from app.orchestrator.loop.context import LoopSpec, RunnerDeps
from app.orchestrator.loop.delta_pace import Paced
from app.orchestrator.loop.reply import GATHER_SECONDS, ReplyStream
from app.threads import changes
from app.threads.fence import Fenced
from app.threads.records import StoredMessage
from app.threads.writer import create_messages, update_message

logger = logging.getLogger(__name__)
UNWRITTEN_ARGUMENTS = "{}"  # the assistant message's calls until the turn is recorded


class PreparingCalls:
    """One model turn's calls while they stream: `seen` takes the calls so far (the
    door's `on_calls`), `settle` ends it once the stream ended; `cells` are the prepared
    cells by the call's place in the turn."""

    def __init__(
        self, deps: RunnerDeps, run: Run, spec: LoopSpec, reply: ReplyStream | None
    ) -> None:
        self.deps, self.run, self.spec, self.reply = deps, run, spec, reply
        self.cells: dict[int, StoredMessage] = {}
        self._calls: list[StreamedCall] = []
        self._gather: asyncio.TimerHandle | None = None
        self._writing: asyncio.Task[None] | None = None
        self._began = False  # the turn's one write began (or the stream ended before)
        self._ended = False  # the stream ended: the arguments' last frame is out
        self._sent: dict[int, int] = {}  # characters of each call's arguments announced
        self._frames = Paced(lambda: deps.pace.window, self._announce)

    async def seen(self, calls: list[StreamedCall]) -> None:
        self._calls = calls
        if self.cells:
            self._announce_soon()
        elif self._gather is None and not self._began:
            loop = asyncio.get_running_loop()
            self._gather = loop.call_later(GATHER_SECONDS, self._begin)

    def _begin(self) -> None:
        self._gather, self._began = None, True
        self._writing = self.deps.background(self._write())

    async def _write(self) -> None:
        """The cells of the calls known now (named), in one transaction with the assistant
        message, if it is still to be created."""
        try:
            todo = [(place, call) for place, call in enumerate(self._calls) if call.name]
            if todo:
                await self._create(todo)
        except Fenced:
            pass  # the run stops (runner.py says so, once)
        except Exception:  # the turn's record creates the cells instead
            logger.warning("run %s: creating the calls' cells failed", self.run.id, exc_info=True)
        finally:
            self._writing = None

    async def _create(self, todo: list[tuple[int, StreamedCall]]) -> None:
        run, reply = self.run, self.reply
        if reply is not None:
            await reply.hold()
        rows = [preparing_row(call, self.spec, run.id) for _, call in todo]
        calls = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": UNWRITTEN_ARGUMENTS},
            }
            for _, call in todo
        ]

        async def work(session: AsyncSession) -> tuple[StoredMessage | None, list[StoredMessage]]:
            if reply is None:  # a specialist's calls: its text is no message
                return None, await create_messages(session, run.thread_id, rows)
            if reply.message is not None:
                await update_message(session, reply.message, tool_calls=calls)
                return None, await create_messages(session, run.thread_id, rows)
            assistant: dict[str, Any] = {
                "role": "assistant", "content": reply.text or None,
                "is_user_facing": bool(reply.text), "tool_calls": calls, "run_id": run.id,
            }  # fmt: skip
            message, *created = await create_messages(session, run.thread_id, [assistant, *rows])
            return message, created

        # Creates alone (no reply message to update): one statement on PostgreSQL
        # (writer.creates_alone), without BEGIN/COMMIT.
        alone = reply is None or reply.message is None
        assistant, created = await (self.deps.write_alone if alone else self.deps.write)(work)
        if assistant is not None and reply is not None:
            reply.adopt(assistant)
        self.cells.update(zip((place for place, _ in todo), created, strict=True))
        deadlines.opened(created)  # ended with the run or delegation, if still open then
        self._announce_soon()  # the arguments so far

    def _announce_soon(self) -> None:
        if not self._ended:  # once ended, `settle` sent the rest
            self._frames.soon()

    def _announce(self) -> bool:
        """A frame for each prepared call whose arguments grew since the last."""
        sent_any = False
        for place, message in self.cells.items():
            arguments = self._calls[place].arguments
            sent = self._sent.get(place, 0)
            if len(arguments) > sent:
                changes.tool_arguments(self.run.thread_id, message.id, sent, arguments[sent:])
                self._sent[place] = len(arguments)
                sent_any = True
        return sent_any

    @contextlib.asynccontextmanager
    async def streaming(self) -> AsyncIterator[PreparingCalls]:
        """While the model's turn streams (the reply's too, if any): afterwards both are
        settled, however the stream ended."""
        if self.reply is not None:
            self.reply.start()
        try:
            yield self
        finally:
            await self.settle()
            if self.reply is not None:
                await self.reply.settle()

    async def settle(self) -> None:
        """The stream ended (or broke off): a write not begun is dropped, one under way
        finishes, the arguments not yet announced are (before the cells leave
        `preparing`)."""
        self._began = self._ended = True
        if self._gather is not None:
            self._gather.cancel()
            self._gather = None
        if self._writing is not None:
            await asyncio.shield(self._writing)  # it logs its own failure
        self._frames.now()
