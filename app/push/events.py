"""Push events, written in the transaction of the change that causes them (the outbox).

`PushHook` hears every run and message change inside its transaction
(app/threads/changes.py). A run's end (any way: alert for completed/failed, and the end of
its Live Activities) is marked on the run row by the very UPDATE that ends it
(`runs.push_due`, true only if a device not watching or a Live Activity may need it), so
a turn that pushes nothing costs no statement more; the sender turns due runs into
events (app/push/fanout.py). A tool call waiting for the user (`awaiting_approval`,
`awaiting_device`, `awaiting_input`) adds a `PushEvent` row. Either commits with the change or not at all;
after commit the sender is woken (app/db/outbox.on_commit) and fans out to devices,
checking again who is watching.

`tool_waits(session, message)` is the one call for "a tool waits for the user": the hook
makes it for every cell the writer stores in a waiting status; call it yourself only for
a wait that is not such a cell write.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession

from app.db import clock
from app.db.models import PushEvent, Run, ThreadMessage
from app.db.outbox import on_commit
from app.lib.listeners import Listeners
from app.push import repository
from app.threads import activity, changes

ENDED = frozenset({"completed", "failed", "cancelled"})
WAITING = frozenset({"awaiting_approval", "awaiting_device", "awaiting_input"})
REMINDER_LEAD_SECONDS = 3600.0  # a long wait is recalled an hour before it ends
REMINDER_MIN_WAIT_SECONDS = 120.0  # a shorter wait gets no reminder

# No logger: a waker's failure reaches the after-commit callback, which logs it.
_wakers: Listeners[Callable[[], None]] = Listeners("push waker")


def add_waker(wake: Callable[[], None]) -> None:
    _wakers.add(wake)


def remove_waker(wake: Callable[[], None]) -> None:
    _wakers.remove(wake)


def _wake() -> None:
    _wakers.notify()


def wake_after_commit(session: AsyncSession) -> None:
    """Rows for the sender were written in this transaction: wake it once they commit."""
    on_commit(session, _wake)


def _add(session: AsyncSession, event: PushEvent) -> None:
    session.add(event)
    on_commit(session, _wake)


def tool_waits(session: AsyncSession, message: ThreadMessage) -> None:
    """A tool call waits for the user: a time-sensitive alert (category APPROVAL_REQUEST or
    DEVICE_REQUEST by the cell's status) to devices of a user not watching the thread,
    and a reminder before it expires (`reminder_at`). One push of each per message and
    status, however often this is called; a reminder of a call answered by then is not
    sent (the fan-out checks the cell)."""
    cell: dict[str, Any] = message.tool_activity or {}
    status = cell.get("status") or "awaiting_approval"
    data = {"status": status, "tool_name": cell.get("name"), "expires_at": cell.get("expires_at")}
    _add(session, _waiting_event(message, f"wait:{message.id}:{status}", data))
    remind_at = reminder_at(activity.expires_at(cell), clock.now())
    if remind_at is not None:
        reminder = _waiting_event(
            message, f"remind:{message.id}:{status}", data | {"reminder": True}
        )
        reminder.next_attempt_at = remind_at  # not fanned out before then
        _add(session, reminder)


def task_reminder(
    session: AsyncSession, task_id: UUID, owner_id: UUID, remind_at: datetime, *, late: bool
) -> None:
    """A task's reminder is due (the scheduler claimed it in this transaction): an alert
    to every device of its owner, once per reminder time (a snooze is a new one)."""
    key = f"reminder:{task_id}:{remind_at.isoformat()}"
    data = {"task_id": str(task_id), "remind_at": remind_at.isoformat(), "late": late}
    _add(session, PushEvent(kind="task_reminder", event_key=key, user_id=owner_id, data=data))


def schedule_paused(
    session: AsyncSession, schedule_id: UUID, owner_id: UUID, thread_id: UUID
) -> None:
    """A schedule's runs kept failing and it was paused (in this transaction): tell its
    owner, once per pause."""
    key = f"schedule-paused:{schedule_id}:{clock.now().isoformat()}"
    data = {"schedule_id": str(schedule_id)}
    event = PushEvent(
        kind="schedule_paused", event_key=key, user_id=owner_id, thread_id=thread_id, data=data
    )
    _add(session, event)


def _waiting_event(message: ThreadMessage, key: str, data: dict[str, Any]) -> PushEvent:
    return PushEvent(
        kind="tool_waiting",
        event_key=key,
        thread_id=message.thread_id,
        run_id=message.run_id,
        message_id=message.id,
        seq=message.seq,
        data=data,
    )


def reminder_at(expires_at: datetime | None, now: datetime) -> datetime | None:
    """When to remind the user of a wait: REMINDER_LEAD_SECONDS before it expires, or a
    quarter of a shorter wait before; none for a wait without end or under
    REMINDER_MIN_WAIT_SECONDS (the first alert is recent enough)."""
    if expires_at is None:
        return None
    wait = (expires_at - now).total_seconds()
    if wait < REMINDER_MIN_WAIT_SECONDS:
        return None
    return expires_at - timedelta(seconds=min(REMINDER_LEAD_SECONDS, wait / 4))


class PushHook(changes.TransactionHook):
    def run_end_values(self) -> dict[str, Any]:
        return {"push_due": repository.END_NEEDS_PUSH}

    def run_changed(self, session: AsyncSession, run: Run) -> None:
        if run.status in ENDED and run.push_due:
            on_commit(session, _wake)

    def message_changed(self, session: AsyncSession, message: ThreadMessage) -> None:
        if message.tool_activity is not None and activity.status_of(message.tool_activity) in (
            WAITING
        ):
            tool_waits(session, message)
