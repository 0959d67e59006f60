"""Committed changes (app/threads/changes.py, the change port) as websocket frames.

The realtime plugin registers a `FrameSink` while it runs; the threads domain hands it
changes after commit, never after a rollback, so a subscriber never sees a change the
database does not have.
"""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

from app.realtime.events import (
    DeltaFrame,
    Frame,
    MessageFrame,
    RunFrame,
    ToolArgumentsFrame,
    ToolOutputFrame,
)
from app.threads import changes
from app.threads.schemas import RunRead, ThreadMessageRead


class FrameSink(changes.ChangeSink):
    """Each change as a frame, handed to `deliver(thread_id, frame)` (which must not block)."""

    def __init__(self, deliver: Callable[[UUID, Frame], None]) -> None:
        self.deliver = deliver

    def message_changed(self, message: ThreadMessageRead) -> None:
        frame = MessageFrame(thread_id=message.thread_id, seq=message.seq, message=message)
        self.deliver(message.thread_id, frame)

    def run_changed(self, run: RunRead) -> None:
        self.deliver(run.thread_id, RunFrame(thread_id=run.thread_id, run=run))

    def run_waiting(self, run: RunRead, position: int) -> None:
        frame = RunFrame(thread_id=run.thread_id, run=run, position=position)
        self.deliver(run.thread_id, frame)

    def text_delta(self, thread_id: UUID, message_id: UUID, content: str) -> None:
        frame = DeltaFrame(thread_id=thread_id, message_id=message_id, content=content)
        self.deliver(thread_id, frame)

    def tool_output(self, thread_id: UUID, message_id: UUID, offset: int, chunk: str) -> None:
        frame = ToolOutputFrame(
            thread_id=thread_id, message_id=message_id, offset=offset, chunk=chunk
        )
        self.deliver(thread_id, frame)

    def tool_arguments(self, thread_id: UUID, message_id: UUID, offset: int, chunk: str) -> None:
        frame = ToolArgumentsFrame(
            thread_id=thread_id, message_id=message_id, offset=offset, chunk=chunk
        )
        self.deliver(thread_id, frame)
