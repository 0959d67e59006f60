"""A running tool call's progress and streamed output, on their way to the app.

Every output chunk goes out at once as an ephemeral `tool_output` frame (a live client
sees each one, with its offset); the cell itself (`display_message`, progress `data`,
`data.output` capped at TOOL_OUTPUT_MAX_CHARS with `truncated`) is written coalesced, at
most once per TOOL_FLUSH_SECONDS, so a chatty tool costs a few writes a second and a
client that (re)subscribes reads the output so far from the cell. `settled()` hands the
last state to the call's final write, so nothing between two flushes is lost.

It listens to the executor's lifecycle events (app/tools/events.py); the transitions
themselves are app/threads/activity.py's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any

from app.threads import activity as cell
from app.threads import changes
from app.threads.activity import Activity
from app.threads.fence import Fenced
from app.tools.base import ToolResult
from app.tools.events import ToolCall

logger = logging.getLogger(__name__)
# Frames stay small on the pub/sub backend: a longer chunk goes out as several frames.
FRAME_CHUNK_CHARS = 1000

WriteCell = Callable[[Activity], Awaitable[None]]
CurrentCell = Callable[[], Activity | None]


class CellStream:
    def __init__(
        self,
        *,
        message_id: Any,
        current: CurrentCell,
        write: WriteCell,
        max_chars: int,
        interval: float,
    ) -> None:
        self.message_id, self._current, self._write = message_id, current, write
        self.max_chars, self.interval = max_chars, interval
        self.output, self.truncated, self._output_changed = "", False, False
        self._display_message: str | None = None
        self._data: dict[str, Any] | None = None
        self._dirty = self._writing = self._closed = False
        self._last_write = -math.inf
        self._task: asyncio.Task[None] | None = None

    # -- lifecycle events (ToolEvents) ---------------------------------------------------
    async def on_start(self, call: ToolCall) -> None:
        return None

    async def on_progress(
        self, call: ToolCall, display_message: str | None, data: dict[str, Any] | None
    ) -> None:
        if display_message is not None:
            self._display_message = display_message
        if data is not None:
            self._data = {**(self._data or {}), **data}
        self._changed()

    async def on_output(self, call: ToolCall, offset: int, chunk: str) -> None:
        for start in range(0, len(chunk), FRAME_CHUNK_CHARS):
            piece = chunk[start : start + FRAME_CHUNK_CHARS]
            changes.tool_output(call.thread_id, self.message_id, offset + start, piece)
        room = self.max_chars - len(self.output)
        if room > 0:
            self.output += chunk[:room]
            self._output_changed = True
        if len(chunk) > room and not self.truncated:
            self.truncated = self._output_changed = True
        self._changed()

    async def on_end(self, call: ToolCall, result: ToolResult) -> None:
        return None

    async def on_error(self, call: ToolCall, result: ToolResult) -> None:
        return None

    # -- coalesced writes ----------------------------------------------------------------
    def _changed(self) -> None:
        self._dirty = True
        if not self._closed and (self._task is None or self._task.done()):
            self._task = asyncio.create_task(self._flush_soon())

    async def _flush_soon(self) -> None:
        loop = asyncio.get_running_loop()
        while self._dirty and not self._closed:
            wait = self._last_write + self.interval - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)  # cancelled here by `settled`, never mid-write
                continue
            self._writing = True
            try:
                await self._write(self._pending(self._current()))
            except Fenced:
                return  # the run stops (runner.py says so, once)
            except Exception:  # the output is kept: the next flush or the final write has it
                logger.warning("writing tool progress of %s failed", self.message_id, exc_info=True)
                self._dirty = self._output_changed = True
            finally:
                self._writing = False
                self._last_write = loop.time()

    def _pending(self, activity: Activity | None) -> Activity:
        """`activity` with what changed since the last write applied (and then forgotten)."""
        changed = cell.progressed(activity, display_message=self._display_message, data=self._data)
        if self._output_changed:
            changed = cell.output_appended(changed, output=self.output, truncated=self.truncated)
        self._display_message = self._data = None
        self._dirty = self._output_changed = False
        return changed

    async def drained(self) -> Activity | None:
        """The cell with every pending change applied and no write in flight, the stream
        going on (a cell about to change status must not be overwritten by a flush that
        read it before)."""
        await self._no_flush_in_flight()
        return self._pending(self._current()) if self._dirty else self._current()

    async def _no_flush_in_flight(self) -> None:
        """A flush not yet writing is dropped (its changes stay pending); one writing ends."""
        task = self._task
        if task is not None and not task.done():
            if not self._writing:
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def settled(self) -> Activity | None:
        """Stop flushing; the cell's latest state (pending changes applied) for the final
        write, or None when nothing is pending."""
        self._closed = True
        await self._no_flush_in_flight()
        return self._pending(self._current()) if self._dirty else None

    def abandon(self) -> None:
        """The call was cancelled: stop flushing (an in-flight write still completes)."""
        self._closed = True
        if self._task is not None and not self._writing:
            self._task.cancel()
