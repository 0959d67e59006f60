"""The user's answer to a tool call that asked for input (POST …/messages/{message_id}/input).

The cell waits as `awaiting_input`; the first answer wins (written under the thread lock
while the cell still waits; later answers and answers after expiry get 409). An `accept`
must carry `content` matching the request's `requested_schema`: a wrong one is refused
(400, field by field) and the cell keeps waiting. The answer goes into the cell
(`in_progress`, `data.input_response`) and wakes the run's wait; the tool takes it from
there (app/orchestrator/loop/input_requests.py) and the call goes on.
"""

from __future__ import annotations

from uuid import UUID

from litestar import Controller, post
from sqlalchemy.ext.asyncio import AsyncSession

from app.accounts.deps import SECURITY
from app.db.models import Thread, ThreadMessage, User
from app.lib.problems import ProblemException, problems
from app.orchestrator.scheduling.notify import notify_after_commit
from app.orchestrator.waits.cells import waiting_message
from app.threads import activity as cell
from app.threads.schemas import InputAnswer, ThreadMessageRead
from app.threads.serializers import message_read
from app.threads.services import get_owned_thread
from app.threads.writer import update_message
from app.tools.json_schema import schema_errors
from app.tools.validation import without_nul


def _response(request: dict, body: InputAnswer) -> dict:
    if body.action != "accept":
        return {"action": body.action}
    if request.get("mode") == "url":  # the user went to the URL: nothing to send back
        return {"action": "accept"}
    if body.content is None:
        raise ProblemException(400, "An `accept` carries the `content` the request asks for.")
    errors = schema_errors(request.get("requested_schema"), body.content)
    if errors:
        raise ProblemException(
            400,
            "The content does not match the requested schema.",
            errors=[{**error, "source": "body"} for error in errors],
        )
    return {"action": "accept", "content": without_nul(body.content)}


async def submit_input(
    session: AsyncSession, thread: Thread, message_id: UUID, body: InputAnswer
) -> ThreadMessage:
    message = await waiting_message(
        session,
        thread.id,
        message_id,
        cell.AWAITING_INPUT,
        answered="This tool activity is not waiting for input (it was already answered).",
        expired="This request for input has expired.",
    )
    activity = message.tool_activity or {}
    request = (activity.get("data") or {}).get("input_request") or {}
    answer = _response(request, body)
    await update_message(session, message, tool_activity=cell.input_given(activity, answer))
    notify_after_commit(session, "approval", message.id)  # wakes the run's wait
    return message


class InputAnswerController(Controller):
    path = "/api/threads/{thread_id:uuid}/messages/{message_id:uuid}/input"
    tags = ["messages"]
    security = SECURITY

    @post("/", operation_id="SubmitToolInput", status_code=200, responses=problems(404, 409))
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
