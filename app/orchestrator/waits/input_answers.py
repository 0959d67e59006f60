"""The user's answer to a tool call that asked for input (POST …/messages/{message_id}/input).

An `accept` must carry `content` matching the request's `requested_schema`: a wrong one is
refused (400, field by field) and the cell keeps waiting. The answer goes into the cell
(`in_progress`, `data.input_response`) and wakes the run's wait; the tool takes it from
there (app/orchestrator/loop/input_requests.py) and the call goes on.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Thread, ThreadMessage
from app.lib.problems import ProblemException
from app.orchestrator.waits.cells import INPUT, Answered, answer
from app.threads import activity as cell
from app.threads.schemas import InputAnswer
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


def _given(body: InputAnswer, activity: dict[str, Any]) -> Answered:
    request = (activity.get("data") or {}).get("input_request") or {}
    return Answered(cell.input_given(activity, _response(request, body)))


async def submit_input(
    session: AsyncSession, thread: Thread, message_id: UUID, body: InputAnswer
) -> ThreadMessage:
    return await answer(session, thread, message_id, INPUT, lambda activity: _given(body, activity))
