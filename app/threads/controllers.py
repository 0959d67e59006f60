from __future__ import annotations

from uuid import UUID

from litestar import delete, get, patch, post
from sqlalchemy.ext.asyncio import AsyncSession

from app.accounts.deps import SignedInController
from app.attachments.storage import Storage
from app.db.models import User
from app.lib.page_request import PAGE, PageRequest
from app.lib.problems import problems
from app.threads import services
from app.threads.schemas import ThreadCreate, ThreadPage, ThreadRead, ThreadUpdate
from app.threads.serializers import thread_read


class ThreadController(SignedInController):
    path = "/api/threads"
    tags = ["threads"]

    @post("/", operation_id="CreateThread", responses=problems(404))
    async def create_thread(
        self, data: ThreadCreate, db_session: AsyncSession, current_user: User
    ) -> ThreadRead:
        thread = await services.create_thread(db_session, current_user, data.agent_id, data.title)
        return thread_read(thread, None)

    @get("/", operation_id="ListThreads", responses=problems(), dependencies=PAGE)
    async def list_threads(
        self, db_session: AsyncSession, current_user: User, page: PageRequest
    ) -> ThreadPage:
        """Your threads, newest activity first; pass `next_cursor` back for the next page."""
        return await services.list_threads(db_session, current_user, page.size, page.cursor)

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
        self,
        thread_id: UUID,
        db_session: AsyncSession,
        current_user: User,
        attachment_storage: Storage,
    ) -> None:
        """Delete the thread, its messages and their attachments (stored files too)."""
        thread = await services.get_owned_thread(db_session, current_user, thread_id)
        await services.delete_thread(db_session, thread, attachment_storage)
