"""Where committed message and run changes go: frames to the process's publisher.

The threads domain announces changes through its port (app/threads/changes.py), after
commit and never after a rollback, so a subscriber never sees a change the database
does not have. This module registers the sink that turns them into frames; it is
imported by the app (through app/realtime/channels.py) before anything is written.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol
from uuid import UUID

from app.realtime.events import DeltaFrame, Frame, MessageFrame, RunFrame, ToolOutputFrame
from app.threads import changes
from app.threads.schemas import RunRead, ThreadMessageRead

logger = logging.getLogger(__name__)


class Publisher(Protocol):
    def publish(self, thread_id: UUID, frame: Frame) -> None:
        """Deliver a frame to the thread's subscribers; must not block."""


class InProcessPublisher:
    """Fans frames out to local listeners (callbacks), in this process only."""

    def __init__(self) -> None:
        self._listeners: list[Callable[[UUID, Frame], Any]] = []

    def add_listener(self, listener: Callable[[UUID, Frame], Any]) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[UUID, Frame], Any]) -> None:
        self._listeners.remove(listener)

    def publish(self, thread_id: UUID, frame: Frame) -> None:
        for listener in list(self._listeners):
            try:
                listener(thread_id, frame)
            except Exception:  # a broken listener must not break the writer
                logger.exception("publisher listener failed")


_current: Publisher = InProcessPublisher()


def set_publisher(publisher: Publisher) -> None:
    global _current
    _current = publisher


def get_publisher() -> Publisher:
    return _current


class _FrameSink(changes.ChangeSink):
    """Committed changes as frames, handed to the publisher in place at that moment."""

    def message_changed(self, message: ThreadMessageRead) -> None:
        frame = MessageFrame(thread_id=message.thread_id, seq=message.seq, message=message)
        _current.publish(message.thread_id, frame)

    def run_changed(self, run: RunRead) -> None:
        _current.publish(run.thread_id, RunFrame(thread_id=run.thread_id, run=run))

    def text_delta(self, thread_id: UUID, message_id: UUID, content: str) -> None:
        frame = DeltaFrame(thread_id=thread_id, message_id=message_id, content=content)
        _current.publish(thread_id, frame)

    def tool_output(self, thread_id: UUID, message_id: UUID, offset: int, chunk: str) -> None:
        frame = ToolOutputFrame(
            thread_id=thread_id, message_id=message_id, offset=offset, chunk=chunk
        )
        _current.publish(thread_id, frame)


changes.register(_FrameSink())
