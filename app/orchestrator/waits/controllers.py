"""The answers to waiting tool calls: an approval, the user's input, a device tool's result.

POST /api/threads/{thread_id}/messages/{message_id}/approval | /input | /result.
"""

from __future__ import annotations

from uuid import UUID

from litestar import post
from sqlalchemy.ext.asyncio import AsyncSession

from app.accounts.deps import SignedInController
from app.db.models import User
from app.lib.problems import problems
from app.orchestrator.waits.approvals import decide
from app.orchestrator.waits.device_results import submit_result
from app.orchestrator.waits.input_answers import submit_input
from app.settings import Settings
from app.threads.schemas import (
    ApprovalDecision,
    DeviceToolResult,
    InputAnswer,
    ThreadMessageRead,
)
from app.threads.serializers import message_read
from app.threads.services import get_owned_thread

ANSWER_PROBLEMS = problems(404, 409)


class WaitAnswerController(SignedInController):
    path = "/api/threads/{thread_id:uuid}/messages/{message_id:uuid}"
    tags = ["messages"]

    @post("/approval", operation_id="DecideApproval", status_code=200, responses=ANSWER_PROBLEMS)
    async def decide_approval(
        self,
        thread_id: UUID,
        message_id: UUID,
        data: ApprovalDecision,
        db_session: AsyncSession,
        current_user: User,
    ) -> ThreadMessageRead:
        """Approve or deny a tool call awaiting approval; the first decision wins (later: 409)."""
        thread = await get_owned_thread(db_session, current_user, thread_id)
        return message_read(await decide(db_session, thread, message_id, data))

    @post("/input", operation_id="SubmitToolInput", status_code=200, responses=ANSWER_PROBLEMS)
    async def submit(
        self,
        thread_id: UUID,
        message_id: UUID,
        data: InputAnswer,
        db_session: AsyncSession,
        current_user: User,
    ) -> ThreadMessageRead:
        """Answer a tool call that asks you for input (`awaiting_input`, the request in
        `data.input_request`): `accept` with `content` matching its `requested_schema`,
        or `decline` / `cancel`. The first answer wins (later: 409); content not matching
        the schema is refused (400) and the call keeps waiting."""
        thread = await get_owned_thread(db_session, current_user, thread_id)
        return message_read(await submit_input(db_session, thread, message_id, data))

    @post(
        "/result",
        operation_id="SubmitDeviceToolResult",
        status_code=200,
        responses=ANSWER_PROBLEMS,
    )
    async def submit_device_result(
        self,
        thread_id: UUID,
        message_id: UUID,
        data: DeviceToolResult,
        db_session: AsyncSession,
        current_user: User,
        settings: Settings,
    ) -> ThreadMessageRead:
        """Answer a tool call the phone runs (`awaiting_device`): its output or its error.
        The first answer wins (later: 409); an output not matching the tool's
        `result_schema` is refused (400) and the call keeps waiting."""
        thread = await get_owned_thread(db_session, current_user, thread_id)
        result = await submit_result(
            db_session, thread, message_id, data, settings.tool_result_max_bytes
        )
        return message_read(result)
