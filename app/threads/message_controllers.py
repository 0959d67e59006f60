from __future__ import annotations

from typing import Annotated
from uuid import UUID

from litestar import MediaType, Response, delete, get, post
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import Parameter
from sqlalchemy.ext.asyncio import AsyncSession

from app.accounts.deps import SignedInController
from app.attachments.storage import Storage
from app.db.models import User
from app.lib.pagination import DEFAULT_PAGE_SIZE, PageLimit, page_size
from app.lib.problems import ProblemException, problems
from app.settings import Settings
from app.threads import messages, services
from app.threads.message_reads import latest_page_json, list_owned_messages
from app.threads.schemas import MessageCreate, MessagePage, MessagePosted, ThreadMessageRead
from app.threads.serializers import message_read, run_read
from app.threads.services import get_owned_thread, get_owned_thread_for_post
from app.usage.budget import refuse_if_spent

# A posted (or edited, or regenerated) message: 202 queued; 200 a repeat of its key.
POSTED_RESPONSES = {
    200: ResponseSpec(MessagePosted, description="A repeat of an earlier client_message_id"),
    **problems(404, 409, 413, 429),
}


class MessageController(SignedInController):
    path = "/api/threads/{thread_id:uuid}/messages"
    tags = ["messages"]

    @post(
        "/",
        operation_id="PostMessage",
        status_code=202,
        responses=POSTED_RESPONSES,
    )
    async def post_message(
        self,
        thread_id: UUID,
        data: MessageCreate,
        db_session: AsyncSession,
        current_user: User,
        settings: Settings,
    ) -> Response[MessagePosted]:
        """Store a user message and queue a run; a repeated `client_message_id` answers 200.
        429 (with `Retry-After`): the monthly model usage budget is spent."""
        await refuse_if_spent(db_session, current_user.id, settings)
        thread, agent_type = await get_owned_thread_for_post(db_session, current_user, thread_id)
        message, run, created = await messages.post_user_message(
            db_session, thread, data, agent_type
        )
        body = MessagePosted(message=message_read(message), run=run_read(run))
        return Response(body, status_code=202 if created else 200)

    @get("/", operation_id="ListMessages", responses=problems(404))
    async def list_messages(
        self,
        thread_id: UUID,
        db_session: AsyncSession,
        current_user: User,
        # Litestar drops a falsy `ge=0` from the spec of an optional int: restate it.
        after_seq: Annotated[
            int | None, Parameter(ge=0, le=2**53, schema_extra={"minimum": 0})
        ] = None,
        # `Annotated[int, …] | None` would document the bounds but not enforce them. A
        # position is a 32-bit column: a larger bound would fail in the database instead.
        before_position: Annotated[int | None, Parameter(ge=1, le=2**31 - 1)] = None,
        limit: PageLimit = DEFAULT_PAGE_SIZE,
    ) -> Response[MessagePage]:
        """`after_seq`: changes after a seq, ascending; `before_position`: older history;
        neither: the latest page; both: 400 (a sync and a page back are two reads). Items
        are always in ascending order."""
        if after_seq is not None and before_position is not None:
            raise ProblemException(
                400,
                "Give after_seq (changes since a sync) or before_position (older history), "
                "not both.",
                errors=[{"field": "before_position", "message": "not with after_seq",
                         "source": "query"}],
            )  # fmt: skip
        limit = page_size(limit)
        if after_seq is None and before_position is None:
            # The page clients poll: served pre-encoded while the thread is unchanged.
            body = await latest_page_json(db_session, current_user, thread_id, limit=limit)
            return Response(body, media_type=MediaType.JSON)
        page = await list_owned_messages(
            db_session,
            current_user,
            thread_id,
            limit=limit,
            after_seq=after_seq,
            before_position=before_position,
        )
        return Response(page)

    @get("/{message_id:uuid}", operation_id="GetMessage", responses=problems(404))
    async def get_message(
        self, thread_id: UUID, message_id: UUID, db_session: AsyncSession, current_user: User
    ) -> ThreadMessageRead:
        thread = await get_owned_thread(db_session, current_user, thread_id)
        return message_read(await messages.get_message(db_session, thread, message_id))

    @delete(
        "/{message_id:uuid}",
        operation_id="DeleteMessage",
        status_code=204,
        responses=problems(404, 409),
    )
    async def delete_message(
        self,
        thread_id: UUID,
        message_id: UUID,
        db_session: AsyncSession,
        current_user: User,
        attachment_storage: Storage,
    ) -> None:
        """Delete a message and the branch below it (its cells and attachments too; what
        its tools did, such as a task created, stays). 409 while a run under way answers a
        message of that branch or writes below it (another branch can go meanwhile)."""
        thread = await get_owned_thread(db_session, current_user, thread_id)
        await services.delete_message_branch(db_session, thread, message_id, attachment_storage)
