"""Work that must happen only once a transaction has committed (the one outbox).

`on_commit(session, fn)` keeps `fn` on the session; it runs after the transaction
commits, in the order queued, and is dropped on rollback: nobody hears of a change the
database does not have. A failing callback is logged and never breaks the commit or the
callbacks after it (as Zulip's `send_event_on_commit`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

logger = logging.getLogger(__name__)
_KEY = "on_commit"


def on_commit(session: AsyncSession | Session, fn: Callable[[], Any]) -> None:
    """Call `fn()` after the session's transaction commits (never if it rolls back)."""
    session.info.setdefault(_KEY, []).append(fn)


def has_pending(session: AsyncSession | Session) -> bool:
    """Whether work waits for this session's commit."""
    return bool(session.info.get(_KEY))


@event.listens_for(Session, "after_commit")
def _run(session: Session) -> None:
    for fn in session.info.pop(_KEY, ()):
        try:
            fn()
        except Exception:  # the commit happened; one broken callback must not hide it
            logger.exception("after-commit callback %r failed", fn)


@event.listens_for(Session, "after_rollback")
def _drop(session: Session) -> None:
    session.info.pop(_KEY, None)
