"""Edit, regenerate, switch branch: HTTP into app/threads/branches.py (a delete is on
the message itself: message_controllers.py)."""

from __future__ import annotations

from uuid import UUID

from litestar import Response, post
from litestar.openapi.datastructures import ResponseSpec
from sqlalchemy.ext.asyncio import AsyncSession

from app.accounts.deps import SignedInController
from app.db.models import User
from app.lib.pagination import DEFAULT_PAGE_SIZE
from app.lib.problems import ProblemException, problems
from app.settings import Settings
from app.threads import branches, repository
from app.threads.branch_schemas import IfRunning, MessageEdit, ReplyRegenerate
from app.threads.message_controllers import POSTED_RESPONSES
from app.threads.message_reads import list_owned_messages
from app.threads.schemas import MessagePage, MessagePosted
from app.threads.serializers import message_read, run_read
from app.threads.services import get_owned_thread_for_post
from app.usage.budget import refuse_if_spent

# A switch kept for the end of the runs under way: the branch still shown.
SWITCH_KEPT = ResponseSpec(
    MessagePage, description="The switch waits for the runs under way; the page still shown"
)


class BranchController(SignedInController):
    path = "/api/threads/{thread_id:uuid}/messages/{message_id:uuid}"
    tags = ["messages"]

    @post(
        "/edit",
        operation_id="EditMessage",
        status_code=202,
        responses=POSTED_RESPONSES,
    )
    async def edit_message(
        self,
        thread_id: UUID,
        message_id: UUID,
        data: MessageEdit,
        db_session: AsyncSession,
        current_user: User,
        settings: Settings,
    ) -> Response[MessagePosted]:
        """A new version of a user message (a sibling: same parent), answered by a new
        run; the thread shows its branch. 409: not a user message, or a run under way and
        `if_running` (or the agent type) says `reject`."""
        await refuse_if_spent(db_session, current_user.id, settings)
        thread, agent_type = await get_owned_thread_for_post(db_session, current_user, thread_id)
        message, run, created = await branches.edit_message(
            db_session, thread, agent_type, message_id, data
        )
        body = MessagePosted(message=message_read(message), run=run_read(run))
        return Response(body, status_code=202 if created else 200)

    @post(
        "/regenerate",
        operation_id="RegenerateReply",
        status_code=202,
        responses=POSTED_RESPONSES,
    )
    async def regenerate_reply(
        self,
        thread_id: UUID,
        message_id: UUID,
        data: ReplyRegenerate,
        db_session: AsyncSession,
        current_user: User,
        settings: Settings,
    ) -> Response[MessagePosted]:
        """Another answer to the user message `message_id` is or answers: a new run (of
        `agent_id`, one of your agents, or the thread's), whose reply is a new version
        beside the others. `message` is the user message answered."""
        await refuse_if_spent(db_session, current_user.id, settings)
        thread, agent_type = await get_owned_thread_for_post(db_session, current_user, thread_id)
        if data.agent_id is not None:
            params = {"agent_id": data.agent_id, "user_id": current_user.id}
            if not await db_session.scalar(repository.AGENT_VISIBLE, params):
                raise ProblemException(404, "Agent not found.")
        message, run, created = await branches.regenerate_reply(
            db_session, thread, agent_type, message_id, data
        )
        body = MessagePosted(message=message_read(message), run=run_read(run))
        return Response(body, status_code=202 if created else 200)

    @post(
        "/switch",
        operation_id="SwitchBranch",
        status_code=200,
        responses={202: SWITCH_KEPT, **problems(404, 409)},
    )
    async def switch_branch(
        self,
        thread_id: UUID,
        message_id: UUID,
        db_session: AsyncSession,
        current_user: User,
        # as the body's `if_running` of edit and regenerate (a query parameter: a switch
        # has no body, and clients call it without one)
        if_running: IfRunning | None = None,
    ) -> Response[MessagePage]:
        """Show the branch through `message_id` (a sibling's id, for "‹ 2/3 ›"), up to its
        newest message; answers that branch's latest page (200). While a run is under way
        `if_running` says what to do: `reject` (409), `cancel` (the runs under way are
        cancelled; a running one stops first) or `queue`; when the switch must wait for the
        runs under way to end, 202 answers the branch still shown and a `branch` frame
        tells of the switch when it is made."""
        thread, agent_type = await get_owned_thread_for_post(db_session, current_user, thread_id)
        switched = await branches.switch_branch(
            db_session, thread, agent_type, message_id, if_running
        )
        page = await list_owned_messages(
            db_session,
            current_user,
            thread_id,
            limit=DEFAULT_PAGE_SIZE,
            after_seq=None,
            before_position=None,
        )
        return Response(page, status_code=200 if switched else 202)
