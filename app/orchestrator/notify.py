"""In-process wake-ups after commit: a run was queued, a cancel asked, an approval decided.

The database stays the truth (the runner also polls); this only makes the embedded
runner react at once instead of at its next poll.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Literal
from uuid import UUID

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

logger = logging.getLogger(__name__)
Kind = Literal["queued", "cancel", "approval"]
Listener = Callable[[Kind, UUID], None]
_KEY = "orchestrator_notify"
_listeners: list[Listener] = []


def add_listener(listener: Listener) -> None:
    _listeners.append(listener)


def remove_listener(listener: Listener) -> None:
    if listener in _listeners:
        _listeners.remove(listener)


def notify_after_commit(session: AsyncSession | Session, kind: Kind, object_id: UUID) -> None:
    session.info.setdefault(_KEY, []).append((kind, object_id))


@event.listens_for(Session, "after_commit")
def _deliver(session: Session) -> None:
    for kind, object_id in session.info.pop(_KEY, ()):
        for listener in list(_listeners):
            try:
                listener(kind, object_id)
            except Exception:  # a listener must never break a commit
                logger.exception("orchestrator listener failed")


@event.listens_for(Session, "after_rollback")
def _drop(session: Session) -> None:
    session.info.pop(_KEY, None)
