"""The phone's answer to a device tool call (POST …/messages/{message_id}/result).

An output must match the tool's declared `result_schema`: a wrong one is refused (400,
field by field) and the cell keeps waiting, so the app can send a right one. Then the run's
wait wakes and the model reads the result (app/orchestrator/waits/cells.py).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Thread, ThreadMessage
from app.lib.problems import ProblemException
from app.orchestrator.waits.cells import DEVICE, Answered, answer
from app.threads import activity as cell
from app.threads.schemas import DeviceToolResult
from app.tools.base import ToolResult
from app.tools.bounds import bounded
from app.tools.json_schema import schema_errors
from app.tools.results import DeviceToolOutput
from app.tools.runtime.executor import with_preview
from app.tools.runtime.toolsets import get_device_tool
from app.tools.validation import without_nul

DEVICE_DONE = "Done"  # a success cell's words when the phone sends none
ONE_OF = "Send either `output` or `error`, not both and not neither."


def _outcome(name: str, body: DeviceToolResult) -> ToolResult:
    if (body.output is None) == (body.error is None):
        raise ProblemException(400, ONE_OF)
    if body.error is not None:
        return ToolResult.failure(without_nul(body.error), body.error_type or "system_error")
    device = get_device_tool(name)
    errors = schema_errors(device.result_schema if device else None, body.output)
    if errors:
        raise ProblemException(
            400,
            f"The output does not match the result schema of {name}.",
            errors=[{**error, "source": "body"} for error in errors],
        )
    output = without_nul(body.output)
    said = without_nul(body.display_message) if body.display_message else DEVICE_DONE
    success = ToolResult.success(DeviceToolOutput(tool=name, result=output), display_message=said)
    # The model reads the output as the phone sent it; the cell has it typed.
    return msgspec.structs.replace(success, model_data=output)


def _finished(body: DeviceToolResult, activity: dict[str, Any], max_bytes: int) -> Answered:
    # The request body's own limit bounds the work of cutting it here.
    outcome = with_preview(bounded(_outcome(str(activity.get("name")), body), max_bytes))
    return Answered(
        cell.finished(activity, outcome), outcome.to_model_content(cell.signature_of(activity))
    )


async def submit_result(
    session: AsyncSession,
    thread: Thread,
    message_id: UUID,
    body: DeviceToolResult,
    max_bytes: int,
) -> ThreadMessage:
    return await answer(
        session, thread, message_id, DEVICE, lambda activity: _finished(body, activity, max_bytes)
    )
