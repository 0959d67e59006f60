"""A branch switch that waits for the thread's runs under way.

`SwitchBranch` while a run is under way follows `if_running` (app/threads/branches.py).
With `queue`, or with `cancel` when a running run must first stop, the switch is kept in
the options of the runs under way (`PENDING`: the message switched to) and made by the
end of the last of them, in the transaction that ends it, whatever the end (completed,
failed, cancelled, reaped): the thread then shows the branch through that message, up to
its newest message. It waits because a run writes below the current leaf: the leaf
cannot move under a run still writing. Kept in the runs' rows, a waiting switch outlives
a restart (a parked run keeps it); a later edit, regenerate or switch replaces it (the
newest request wins); a message posted meanwhile is answered on the branch shown, and
the switch is made after its run.

Lock order: the runs' rows, then the thread's. A run's end locks its row and then the
thread (its answer's bump; a runner's fenced writes share-lock the run row first too), so
a request must not hold the thread while it waits for a run's row (a deadlock).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.attributes import set_committed_value

from app.db.models import Run, Thread
from app.db.models.run import ACTIVE_RUN_STATUSES
from app.threads import fence
from app.threads.branch_tree import find_message, newest_below
from app.threads.records import StoredRun
from app.threads.writer import lock_thread, move_leaf

PENDING = "switch_when_idle"

_ACTIVE = select(Run).where(Run.status.in_(ACTIVE_RUN_STATUSES)).order_by(Run.created_at, Run.id)


def _active(thread_id: UUID) -> Any:
    return _ACTIVE.where(Run.thread_id == thread_id).with_for_update()


async def lock_active_runs(session: AsyncSession, thread: Thread) -> list[Run]:
    """The thread's runs under way, oldest first, their rows locked, then the thread
    locked (concurrent requests take turns). A run ending meanwhile is waited for and left
    out. A run queued between the two locks (its poster held the thread) is locked after
    them: it has not started writing (its claim and first write come after its commit,
    and the thread lock is ours the moment that commit is)."""
    await session.scalars(_active(thread.id))
    await lock_thread(session, thread.id)
    return list(await session.scalars(_active(thread.id)))


async def hold(session: AsyncSession, runs: list[Run], message_id: UUID | None) -> None:
    """Keep a switch to `message_id` in the runs' options (None: forget the one kept)."""
    for run in runs:
        options = {key: value for key, value in (run.options or {}).items() if key != PENDING}
        if message_id is not None:
            options[PENDING] = str(message_id)
        if options != (run.options or {}):
            await session.execute(
                update(Run)
                .where(Run.id == run.id)
                .values(options=options or None)
                .execution_options(synchronize_session=False)
            )
            set_committed_value(run, "options", options or None)


async def after_run_end(session: AsyncSession, run: Run | StoredRun) -> None:
    """The switch the ended `run` kept, made if no run of the thread is under way any
    more, else handed on to those that are. No statement for a run without one (nearly
    every run)."""
    message_id = (run.options or {}).get(PENDING)
    if message_id is None:
        return
    with fence.released():  # the run's end checked its lease, and ended it
        others = list(await session.scalars(_active(run.thread_id)))
        if others:
            await hold(session, others, UUID(message_id))
            return
        message = await find_message(session, run.thread_id, UUID(message_id))
        if message is not None:  # deleted meanwhile: the thread stays as it is
            leaf_id = await newest_below(session, run.thread_id, message.id)
            await move_leaf(session, run.thread_id, leaf_id)
