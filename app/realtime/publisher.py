"""Where committed message and run changes go after commit.

The message writer queues frames on the session (`queue_frame`); they are handed to the
process's publisher only once the transaction commits, and dropped on rollback, so a
subscriber never sees a change the database does not have.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol
from uuid import UUID

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from app.realtime.events import DeltaFrame, Frame

logger = logging.getLogger(__name__)
_OUTBOX_KEY = "realtime_outbox"


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


def queue_frame(session: AsyncSession | Session, thread_id: UUID, frame: Frame) -> None:
    """Publish `frame` once the session's transaction commits."""
    session.info.setdefault(_OUTBOX_KEY, []).append((thread_id, frame))


def publish_ephemeral(thread_id: UUID, frame: DeltaFrame) -> None:
    """Deltas are not stored: they go out at once."""
    _current.publish(thread_id, frame)


@event.listens_for(Session, "after_commit")
def _flush_outbox(session: Session) -> None:
    for thread_id, frame in session.info.pop(_OUTBOX_KEY, ()):
        _current.publish(thread_id, frame)


@event.listens_for(Session, "after_rollback")
def _drop_outbox(session: Session) -> None:
    session.info.pop(_OUTBOX_KEY, None)
