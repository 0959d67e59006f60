"""The port through which threads announce committed changes to the layers above.

Threads and the orchestrator say *what* changed (a message, a run, streamed text, a run
queued or asked to stop); whoever delivers it registers a `ChangeSink` at startup:
app/realtime/sink.py turns changes into websocket frames, app/orchestrator/scheduling/notify.py
wakes the embedded runner. Nothing here knows about either.

Stored changes are snapshotted when written (the read Struct of that moment) and handed
to the sinks only after the transaction commits (app/db/outbox.py), never after a
rollback. Text deltas, tool output chunks and the arguments of calls being written are
not stored this way and go out at once.
A `TransactionHook` hears of a change before commit, inside its transaction (the push
outbox writes its rows there).
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Run, ThreadMessage
from app.db.outbox import on_commit
from app.lib.listeners import Listeners
from app.threads.records import StoredMessage, StoredRun
from app.threads.schemas import RunRead, ThreadMessageRead
from app.threads.serializers import message_read, run_read

logger = logging.getLogger(__name__)


class ChangeSink:
    """Receives committed changes; override the methods you care about (no-ops here)."""

    def message_changed(self, message: ThreadMessageRead) -> None:
        """A message was created or updated (its `seq` orders the thread's changes)."""

    def run_changed(self, run: RunRead) -> None:
        """A run's status changed."""

    def branch_moved(
        self, thread_id: UUID, seq: int, leaf_id: UUID | None, deleted_ids: list[UUID]
    ) -> None:
        """The thread shows the branch ending at `leaf_id` from `seq` on (`deleted_ids`:
        messages deleted with the move)."""

    def run_queued(self, run_id: UUID) -> None:
        """A new run waits to be claimed."""

    def run_waiting(self, run: RunRead, position: int) -> None:
        """A queued run waits for a free runner slot, `position` in line (1: next)."""

    def cancel_requested(self, run_id: UUID) -> None:
        """A running run was asked to stop."""

    def text_delta(self, thread_id: UUID, message_id: UUID, content: str) -> None:
        """Assistant text as it streams (ephemeral)."""

    def tool_output(self, thread_id: UUID, message_id: UUID, offset: int, chunk: str) -> None:
        """A running tool's output chunk (ephemeral; the cell's `data.output` keeps it)."""

    def tool_arguments(self, thread_id: UUID, message_id: UUID, offset: int, chunk: str) -> None:
        """The arguments of a call the model is writing (`preparing`), as they stream
        (ephemeral; the cell's `input` has them once the call is written)."""


class TransactionHook:
    """Called inside the writing transaction, before it commits: may add rows to the
    session, which commit or roll back with the change (the push outbox does). Must be
    synchronous and cheap: it runs on every write. No-ops here."""

    def message_changed(
        self, session: AsyncSession, message: ThreadMessage | StoredMessage
    ) -> None:
        """A message was created or updated in this transaction."""

    def run_changed(self, session: AsyncSession, run: Run | StoredRun) -> None:
        """A run's status changed in this transaction."""

    def run_end_values(self) -> dict[str, Any]:
        """Columns (SQL expressions allowed) for the UPDATE that ends a run to set as well:
        a hook that marks the run row itself writes nothing more in the turn."""
        return {}


# A sink's or hook's failure is logged: one broken sink must not keep the others from
# hearing, a hook's side job must never fail the change itself.
_sinks: Listeners[ChangeSink] = Listeners("change sink", logger=logger)
_hooks: Listeners[TransactionHook] = Listeners("transaction hook", logger=logger)


def register(sink: ChangeSink) -> None:
    _sinks.add(sink)


def unregister(sink: ChangeSink) -> None:
    _sinks.remove(sink)


def register_hook(hook: TransactionHook) -> None:
    _hooks.add(hook)


def unregister_hook(hook: TransactionHook) -> None:
    _hooks.remove(hook)


def message_changed(session: AsyncSession, message: ThreadMessage | StoredMessage) -> None:
    if _hooks:
        _hooks.emit("message_changed", session, message)
    on_commit(session, partial(_sinks.emit, "message_changed", message_read(message)))


def branch_moved(
    session: AsyncSession,
    thread_id: UUID,
    seq: int,
    leaf_id: UUID | None,
    deleted_ids: list[UUID],
) -> None:
    on_commit(session, partial(_sinks.emit, "branch_moved", thread_id, seq, leaf_id, deleted_ids))


def run_changed(session: AsyncSession, run: Run | StoredRun) -> None:
    if _hooks:
        _hooks.emit("run_changed", session, run)
    on_commit(session, partial(_sinks.emit, "run_changed", run_read(run)))


def run_end_values() -> dict[str, Any]:
    """What every UPDATE ending a run (completed, failed, cancelled, reaped) sets besides
    its status: the hooks' `run_end_values`, merged."""
    values: dict[str, Any] = {}
    for hook in _hooks:
        values.update(hook.run_end_values())
    return values


def run_queued(session: AsyncSession, run_id: UUID) -> None:
    on_commit(session, partial(_sinks.emit, "run_queued", run_id))


def run_waiting(run: Run | StoredRun, position: int) -> None:
    """Not a stored change: the runner tells a queued run its place in line."""
    _sinks.emit("run_waiting", run_read(run), position)


def cancel_requested(session: AsyncSession, run_id: UUID) -> None:
    on_commit(session, partial(_sinks.emit, "cancel_requested", run_id))


def text_delta(thread_id: UUID, message_id: UUID, content: str) -> None:
    _sinks.emit("text_delta", thread_id, message_id, content)


def tool_output(thread_id: UUID, message_id: UUID, offset: int, chunk: str) -> None:
    _sinks.emit("tool_output", thread_id, message_id, offset, chunk)


def tool_arguments(thread_id: UUID, message_id: UUID, offset: int, chunk: str) -> None:
    _sinks.emit("tool_arguments", thread_id, message_id, offset, chunk)
