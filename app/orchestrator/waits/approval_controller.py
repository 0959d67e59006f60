"""POST /api/threads/{thread_id}/messages/{message_id}/approval."""

from __future__ import annotations

from uuid import UUID

from litestar import Controller, post
from sqlalchemy.ext.asyncio import AsyncSession

from app.accounts.deps import SECURITY
from app.db.models import User
from app.lib.problems import problems
from app.orchestrator.waits.approvals import decide
from app.threads.schemas import ApprovalDecision, ThreadMessageRead
from app.threads.serializers import message_read
from app.threads.services import get_owned_thread


class ApprovalController(Controller):
    path = "/api/threads/{thread_id:uuid}/messages/{message_id:uuid}/approval"
    tags = ["messages"]
    security = SECURITY

    @post("/", operation_id="DecideApproval", status_code=200, responses=problems(404, 409))
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
