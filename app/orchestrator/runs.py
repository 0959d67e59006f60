"""The run queue as seen by the API: create, read, cancel (the runner executes them)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Run, RunStatus, Thread
from app.lib.problems import ProblemException
from app.lib.time import utcnow
from app.realtime.events import RunFrame
from app.realtime.publisher import queue_frame
from app.threads.serializers import run_read


def publish_run(session: AsyncSession, run: Run) -> None:
    """Queue a `run` frame; it goes out after commit."""
    queue_frame(session, run.thread_id, RunFrame(thread_id=run.thread_id, run=run_read(run)))


async def queue_run(
    session: AsyncSession,
    thread: Thread,
    *,
    run_id: UUID,
    trigger_message_id: UUID,
    options: dict[str, Any] | None,
) -> Run:
    run = Run(
        id=run_id,
        thread_id=thread.id,
        agent_id=thread.agent_id,
        trigger_message_id=trigger_message_id,
        status=RunStatus.QUEUED.value,
        options=options,
    )
    session.add(run)
    await session.flush()
    publish_run(session, run)
    return run


async def get_thread_run(session: AsyncSession, thread: Thread, run_id: UUID) -> Run:
    run = await session.scalar(select(Run).where(Run.id == run_id, Run.thread_id == thread.id))
    if run is None:
        raise ProblemException(404, "Run not found.")
    return run


async def request_cancel(session: AsyncSession, run: Run) -> Run:
    """Cancel a queued run at once; ask the runner to stop a running one. Idempotent."""
    if run.status == RunStatus.QUEUED.value:
        run.status = RunStatus.CANCELLED.value
        run.finished_at = utcnow()
        publish_run(session, run)
    elif run.status == RunStatus.RUNNING.value:
        run.cancel_requested = True
    await session.flush()
    return run
