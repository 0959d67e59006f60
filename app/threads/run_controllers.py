from __future__ import annotations

from uuid import UUID

from litestar import get, post
from sqlalchemy.ext.asyncio import AsyncSession

from app.accounts.deps import SignedInController
from app.db.models import User
from app.lib.problems import problems
from app.threads import runs
from app.threads.schemas import RunDetail, RunRead
from app.threads.serializers import run_detail, run_read
from app.threads.services import get_owned_thread
from app.threads.trace import run_trace


class RunController(SignedInController):
    path = "/api/threads/{thread_id:uuid}/runs"
    tags = ["runs"]

    @get("/{run_id:uuid}", operation_id="GetRun", responses=problems(404))
    async def get_run(
        self, thread_id: UUID, run_id: UUID, db_session: AsyncSession, current_user: User
    ) -> RunDetail:
        """A run with its trace: `steps` it executed and `tool_results` of its calls."""
        thread = await get_owned_thread(db_session, current_user, thread_id)
        run = await runs.get_thread_run(db_session, thread, run_id)
        return run_detail(run, await run_trace(db_session, run))

    @post(
        "/{run_id:uuid}/cancel", operation_id="CancelRun", status_code=200, responses=problems(404)
    )
    async def cancel_run(
        self, thread_id: UUID, run_id: UUID, db_session: AsyncSession, current_user: User
    ) -> RunRead:
        """Cancel a run; cancelling a finished run changes nothing."""
        thread = await get_owned_thread(db_session, current_user, thread_id)
        run = await runs.get_thread_run(db_session, thread, run_id)
        return run_read(await runs.request_cancel(db_session, run))
