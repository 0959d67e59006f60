"""POST /api/threads/{thread_id}/messages/{message_id}/result: a device tool's answer."""

from __future__ import annotations

from uuid import UUID

from litestar import Controller, post
from sqlalchemy.ext.asyncio import AsyncSession

from app.accounts.deps import SECURITY
from app.db.models import User
from app.lib.problems import problems
from app.orchestrator.waits.device_results import submit_result
from app.threads.schemas import DeviceToolResult, ThreadMessageRead
from app.threads.serializers import message_read
from app.threads.services import get_owned_thread


class DeviceResultController(Controller):
    path = "/api/threads/{thread_id:uuid}/messages/{message_id:uuid}/result"
    tags = ["messages"]
    security = SECURITY

    @post("/", operation_id="SubmitDeviceToolResult", status_code=200, responses=problems(404, 409))
    async def submit_device_result(
        self,
        thread_id: UUID,
        message_id: UUID,
        data: DeviceToolResult,
        db_session: AsyncSession,
        current_user: User,
    ) -> ThreadMessageRead:
        """Answer a tool call the phone runs (`awaiting_device`): its output or its error.
        The first answer wins (later: 409); an output not matching the tool's
        `result_schema` is refused (400) and the call keeps waiting."""
        thread = await get_owned_thread(db_session, current_user, thread_id)
        return message_read(await submit_result(db_session, thread, message_id, data))
