"""The run queue's storage: queue a run, read one, ask it to stop.

A run is the unit of work: queued -> running (under a lease the runner renews) ->
completed | failed | cancelled. The runner's side (claim, lease, finish, reap) is
app/orchestrator/scheduling/ (claims.py, leases.py, reaper.py, runs.py). Every change is
announced after commit (app/threads/changes.py).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import clock
from app.db.models import Run, RunStatus, Thread
from app.lib.lookup import one_or_404
from app.threads import changes, repository
from app.threads.open_cells import close_open_activities
from app.threads.pending_switch import after_run_end

CANCELLED_BY_USER = "Cancelled by the user."


async def queue_run(
    session: AsyncSession,
    thread: Thread,
    *,
    run_id: UUID,
    trigger_message_id: UUID,
    options: dict[str, Any] | None,
    agent_id: UUID | None = None,
) -> Run:
    """A run of the thread's agent (or `agent_id`, one the caller checked is the user's)."""
    run = Run(
        id=run_id,
        thread_id=thread.id,
        agent_id=agent_id or thread.agent_id,
        trigger_message_id=trigger_message_id,
        status=RunStatus.QUEUED.value,
        options=options,
        # the database's clock, as every later time of the run: a duration is right
        # whichever host queued, ran and ended it
        created_at=clock.now(),
    )
    session.add(run)
    await session.flush()
    changes.run_changed(session, run)
    changes.run_queued(session, run.id)
    return run


async def get_thread_run(session: AsyncSession, thread: Thread, run_id: UUID) -> Run:
    return await one_or_404(session, repository.thread_run(thread.id, run_id), "Run")


async def request_cancel(session: AsyncSession, run: Run) -> Run:
    """Cancel a queued run at once; ask the runner to stop a running one. Idempotent.

    Both are conditional UPDATEs, so a runner claiming the run at the same moment either
    sees it cancelled or is asked to stop it: never both missed.
    """
    if run.status == RunStatus.QUEUED.value:
        cancelled = await session.scalar(
            update(Run)
            .where(Run.id == run.id, Run.status == RunStatus.QUEUED.value)
            .values(
                status=RunStatus.CANCELLED.value,
                finished_at=clock.now(),
                **changes.run_end_values(),
            )
            .returning(Run)
            .execution_options(synchronize_session=False, populate_existing=True)
        )
        if cancelled is not None:
            # a parked run (back in the queue, its calls waiting) ends its cells with it
            await close_open_activities(
                session, cancelled.id, error_type="cancelled", error=CANCELLED_BY_USER
            )
            changes.run_changed(session, cancelled)
            await after_run_end(session, cancelled)  # a branch switch it kept
            return cancelled
        await session.refresh(run)  # claimed meanwhile: now running (or already ended)
    if run.status == RunStatus.RUNNING.value:
        running = await session.scalar(
            update(Run)
            .where(Run.id == run.id, Run.status == RunStatus.RUNNING.value)
            .values(cancel_requested=True)
            .returning(Run)
            .execution_options(synchronize_session=False, populate_existing=True)
        )
        if running is not None:
            changes.cancel_requested(session, run.id)
            return running
        await session.refresh(run)
    return run
