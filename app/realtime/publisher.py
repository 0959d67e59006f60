"""Where committed message and run changes go after commit.

The message writer queues frames on the session (`queue_frame`, through the one outbox
of app/db/outbox.py); they are handed to the process's publisher only once the
transaction commits, and dropped on rollback, so a subscriber never sees a change the
database does not have.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from app.db.outbox import on_commit
from app.realtime.events import DeltaFrame, Frame

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


def _publish(thread_id: UUID, frame: Frame) -> None:
    _current.publish(thread_id, frame)  # the publisher in place at commit time


def queue_frame(session: AsyncSession | Session, thread_id: UUID, frame: Frame) -> None:
    """Publish `frame` once the session's transaction commits."""
    on_commit(session, partial(_publish, thread_id, frame))


def publish_ephemeral(thread_id: UUID, frame: DeltaFrame) -> None:
    """Deltas are not stored: they go out at once."""
    _current.publish(thread_id, frame)
