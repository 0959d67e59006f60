"""In-process wake-ups after commit: a run was queued, a cancel asked, an approval decided.

The database stays the truth (the runner also polls); this only makes the embedded
runner react at once instead of at its next poll. Queued runs and cancel requests come
from the threads domain's change port; approval decisions are this package's own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Literal
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from app.db.outbox import on_commit
from app.threads import changes

logger = logging.getLogger(__name__)
Kind = Literal["queued", "cancel", "approval"]
Listener = Callable[[Kind, UUID], None]
_listeners: list[Listener] = []


def add_listener(listener: Listener) -> None:
    _listeners.append(listener)


def remove_listener(listener: Listener) -> None:
    if listener in _listeners:
        _listeners.remove(listener)


def _deliver(kind: Kind, object_id: UUID) -> None:
    for listener in list(_listeners):
        try:
            listener(kind, object_id)
        except Exception:  # one listener must never keep the others from hearing
            logger.exception("orchestrator listener failed")


def notify_after_commit(session: AsyncSession | Session, kind: Kind, object_id: UUID) -> None:
    on_commit(session, partial(_deliver, kind, object_id))


class _RunWakeups(changes.ChangeSink):
    def run_queued(self, run_id: UUID) -> None:
        _deliver("queued", run_id)

    def cancel_requested(self, run_id: UUID) -> None:
        _deliver("cancel", run_id)


changes.register(_RunWakeups())
