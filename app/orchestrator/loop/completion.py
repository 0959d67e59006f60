"""A run's completed end: its answer written (the streamed message, or a new one) and the
run ended, in one write.

Nothing streamed to update and no call left open: on PostgreSQL the end is one statement
without BEGIN/COMMIT (`RunnerDeps.write_alone`), unless it carries more than itself (a
branch switch kept for it, or an answer that is a new version: runs.NotAlone, nothing
written); then, as every other end, one transaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import RunStatus, ThreadMessage
from app.orchestrator.loop.context import RunnerDeps
from app.orchestrator.loop.reply import ReplyStream
from app.orchestrator.loop.tool_calls import end_open_cells
from app.orchestrator.scheduling import runs
from app.threads import activity as cell
from app.threads.fence import Lease


async def write_completed(
    deps: RunnerDeps,
    reply: ReplyStream,
    lease: Lease,
    answer: tuple[str, str | None],
    spent: Mapping[str, Any] | None,
    left_open: list[ThreadMessage],
) -> None:
    """End the run completed with its answer (the model's text, and a note shown when
    there is none), its usage `spent`; the calls `left_open` ended as interrupted."""
    text, note = answer

    async def work(session: AsyncSession, alone: bool = False) -> None:
        await end_open_cells(session, left_open, "system_error", cell.INTERRUPTED)
        if await reply.write(session, content=text) or not (text or note):
            await runs.finish_run(session, lease, RunStatus.COMPLETED, usage=spent, alone=alone)
            return
        fields = {"role": "assistant", "content": text or note, "run_id": reply.run.id}
        await runs.finish_run_with_answer(
            session, lease, reply.run.thread_id, fields, spent, alone=alone
        )

    if reply.message is None and not left_open:
        try:
            await deps.write_alone(partial(work, alone=True))
            return
        except runs.NotAlone:
            pass  # nothing written: the end as every other, below
    await deps.write(work)
