"""The port through which threads announce committed changes to the layers above.

Threads and the orchestrator say *what* changed (a message, a run, streamed text, a run
queued or asked to stop); whoever delivers it registers a `ChangeSink` at startup:
app/realtime/publisher.py turns changes into websocket frames, app/orchestrator/notify.py
wakes the embedded runner. Nothing here knows about either.

Stored changes are snapshotted when written (the read Struct of that moment) and handed
to the sinks only after the transaction commits (app/db/outbox.py), never after a
rollback. Text deltas and tool output chunks are not stored this way and go out at once.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Run, ThreadMessage
from app.db.outbox import on_commit
from app.threads.schemas import RunRead, ThreadMessageRead
from app.threads.serializers import message_read, run_read

logger = logging.getLogger(__name__)


class ChangeSink:
    """Receives committed changes; override the methods you care about (no-ops here)."""

    def message_changed(self, message: ThreadMessageRead) -> None:
        """A message was created or updated (its `seq` orders the thread's changes)."""

    def run_changed(self, run: RunRead) -> None:
        """A run's status changed."""

    def run_queued(self, run_id: UUID) -> None:
        """A new run waits to be claimed."""

    def cancel_requested(self, run_id: UUID) -> None:
        """A running run was asked to stop."""

    def text_delta(self, thread_id: UUID, message_id: UUID, content: str) -> None:
        """Assistant text as it streams (ephemeral)."""

    def tool_output(self, thread_id: UUID, message_id: UUID, offset: int, chunk: str) -> None:
        """A running tool's output chunk (ephemeral; the cell's `data.output` keeps it)."""


_sinks: list[ChangeSink] = []


def register(sink: ChangeSink) -> None:
    _sinks.append(sink)


def unregister(sink: ChangeSink) -> None:
    if sink in _sinks:
        _sinks.remove(sink)


def _deliver(method: str, *args: Any) -> None:
    for sink in list(_sinks):
        try:
            getattr(sink, method)(*args)
        except Exception:  # one broken sink must not keep the others from hearing
            logger.exception("change sink %r failed on %s", sink, method)


def message_changed(session: AsyncSession, message: ThreadMessage) -> None:
    on_commit(session, partial(_deliver, "message_changed", message_read(message)))


def run_changed(session: AsyncSession, run: Run) -> None:
    on_commit(session, partial(_deliver, "run_changed", run_read(run)))


def run_queued(session: AsyncSession, run_id: UUID) -> None:
    on_commit(session, partial(_deliver, "run_queued", run_id))


def cancel_requested(session: AsyncSession, run_id: UUID) -> None:
    on_commit(session, partial(_deliver, "cancel_requested", run_id))


def text_delta(thread_id: UUID, message_id: UUID, content: str) -> None:
    _deliver("text_delta", thread_id, message_id, content)


def tool_output(thread_id: UUID, message_id: UUID, offset: int, chunk: str) -> None:
    _deliver("tool_output", thread_id, message_id, offset, chunk)
