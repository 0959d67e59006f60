"""Committed changes (app/threads/changes.py, the change port) as websocket frames.

The realtime plugin registers a `FrameSink` while it runs; the threads domain hands it
changes after commit, never after a rollback, so a subscriber never sees a change the
database does not have.
"""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

from app.memories import changes as memory_changes
from app.memories.schemas import MemoryRead
from app.realtime.events import (
    BranchFrame,
    DeltaFrame,
    Frame,
    MemoryFrame,
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

    def branch_moved(
        self, thread_id: UUID, seq: int, leaf_id: UUID | None, deleted_ids: list[UUID]
    ) -> None:
        frame = BranchFrame(
            thread_id=thread_id, seq=seq, current_leaf_id=leaf_id, deleted_message_ids=deleted_ids
        )
        self.deliver(thread_id, frame)

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


class MemoryFrameSink(memory_changes.MemorySink):
    """Each committed memory change as a frame, handed to `deliver(user_id, frame)`."""

    def __init__(self, deliver: Callable[[UUID, Frame], None]) -> None:
        self.deliver = deliver

    def memory_saved(self, owner_id: UUID, memory: MemoryRead) -> None:
        frame = MemoryFrame(change="saved", memory_id=memory.id, memory=memory)
        self.deliver(owner_id, frame)

    def memory_deleted(self, owner_id: UUID, memory_id: UUID) -> None:
        self.deliver(owner_id, MemoryFrame(change="deleted", memory_id=memory_id))

    def memories_cleared(self, owner_id: UUID) -> None:
        self.deliver(owner_id, MemoryFrame(change="cleared"))
