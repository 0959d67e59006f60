from __future__ import annotations

from typing import Annotated
from uuid import UUID

from litestar import Controller, delete, get, patch, post
from litestar.params import Parameter
from sqlalchemy.ext.asyncio import AsyncSession

from app.accounts.deps import SECURITY
from app.db.models import User
from app.lib.pagination import DEFAULT_PAGE_SIZE, PageLimit, page_size
from app.lib.problems import problems
from app.threads import services
from app.threads.schemas import ThreadCreate, ThreadPage, ThreadRead, ThreadUpdate
from app.threads.serializers import thread_read


class ThreadController(Controller):
    path = "/api/threads"
    tags = ["threads"]
    security = SECURITY

    @post("/", operation_id="CreateThread", responses=problems(404))
    async def create_thread(
        self, data: ThreadCreate, db_session: AsyncSession, current_user: User
    ) -> ThreadRead:
        thread = await services.create_thread(db_session, current_user, data.agent_id, data.title)
        return thread_read(thread, None)

    @get("/", operation_id="ListThreads", responses=problems())
    async def list_threads(
        self,
        db_session: AsyncSession,
        current_user: User,
        limit: PageLimit = DEFAULT_PAGE_SIZE,
        cursor: Annotated[str | None, Parameter(max_length=200)] = None,
    ) -> ThreadPage:
        """Your threads, newest activity first; pass `next_cursor` back for the next page."""
        return await services.list_threads(db_session, current_user, page_size(limit), cursor)

    @get("/{thread_id:uuid}", operation_id="GetThread", responses=problems(404))
    async def get_thread(
        self, thread_id: UUID, db_session: AsyncSession, current_user: User
    ) -> ThreadRead:
        thread = await services.get_owned_thread(db_session, current_user, thread_id)
        return thread_read(thread, await services.active_run_id(db_session, thread.id))

    @patch("/{thread_id:uuid}", operation_id="UpdateThread", responses=problems(404))
    async def update_thread(
        self, thread_id: UUID, data: ThreadUpdate, db_session: AsyncSession, current_user: User
    ) -> ThreadRead:
        thread = await services.get_owned_thread(db_session, current_user, thread_id)
        thread = await services.rename_thread(db_session, thread, data.title)
        return thread_read(thread, await services.active_run_id(db_session, thread.id))

    @delete("/{thread_id:uuid}", operation_id="DeleteThread", responses=problems(404))
    async def delete_thread(
        self, thread_id: UUID, db_session: AsyncSession, current_user: User
    ) -> None:
        thread = await services.get_owned_thread(db_session, current_user, thread_id)
        await services.delete_thread(db_session, thread)
