"""A running tool call asks the user for input (an MCP server's elicitation).

The cell goes `awaiting_input` with the request in `data.input_request` (what to ask,
the JSON Schema of the answer) and an `expires_at` APPROVAL_TTL_SECONDS away; writing that
status pushes it to the phone like an approval (app/push/events.py) and a reconnecting
client replays it like any cell. The call waits as an approval does (app/orchestrator/
waits.py: the run off the concurrent-run count, its deadline paused); the app answers
through `POST …/messages/{message_id}/input` (app/orchestrator/waits/input_answers.py), and the
tool gets the answer, or None once the wait expired (the cell is then a `timeout` failure).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from app.orchestrator.loop import deadlines
from app.orchestrator.loop.waiting import wait_for_user
from app.threads import activity as cell
from app.threads.writer import update_message

if TYPE_CHECKING:
    from app.db.models import ThreadMessage
    from app.orchestrator.loop.cell_stream import CellStream
    from app.orchestrator.loop.context import RunnerDeps, RunState


async def ask_user(
    deps: RunnerDeps,
    state: RunState,
    message: ThreadMessage,
    stream: CellStream | None,
    request: dict[str, Any],
) -> dict[str, Any] | None:
    """The user's answer (`{action, content?}`), or None when the wait expired."""
    ttl = deps.settings.approval_ttl_seconds
    current = await stream.drained() if stream is not None else None
    asking = cell.awaiting_input(current or message.tool_activity or {}, request, ttl)

    async def work(session: Any) -> None:
        await update_message(session, message, tool_activity=asking)

    await deps.write(work)
    async with deadlines.paused(ttl):
        fresh = await wait_for_user(deps, message)
    activity = fresh.tool_activity or {}
    answer = (activity.get("data") or {}).get("input_response")
    if cell.status_of(activity) != cell.IN_PROGRESS or not isinstance(answer, dict):
        message.tool_activity = activity  # expired: the final write starts from it
        return None
    message.tool_activity = cell.resumed(activity)  # the call's next writes drop the answer
    return answer
