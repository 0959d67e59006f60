"""Tool calls that need the user's confirmation: the decision.

A call waits as `awaiting_approval` with `expires_at` (the wait is app/orchestrator/waits/cells.py).
The first decision wins: it is written under the thread lock and only if the activity is
still awaiting, so a second decision (or one racing the expiry) answers 409. Approve ->
`in_progress` (the runner then executes it); deny -> `failure` with `permission_error`;
expiry -> `failure` with `timeout` (no one decided: not a denial); the model is told so.
"""

from __future__ import annotations

from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Thread, ThreadMessage
from app.orchestrator.scheduling.notify import notify_after_commit
from app.orchestrator.waits.cells import waiting_message
from app.threads import activity as cell
from app.threads.schemas import ApprovalDecision
from app.threads.writer import update_message


async def decide(
    session: AsyncSession, thread: Thread, message_id: UUID, decision: ApprovalDecision
) -> ThreadMessage:
    message = await waiting_message(
        session,
        thread.id,
        message_id,
        cell.AWAITING_APPROVAL,
        answered="This tool activity is not awaiting approval (it was already decided).",
        expired="The approval request has expired.",
    )
    activity = message.tool_activity or {}
    if decision.approve:
        await update_message(session, message, tool_activity=cell.approved(activity))
    else:
        error = "The user denied this action." + (
            f" Reason: {decision.reason}" if decision.reason else ""
        )
        await update_message(
            session,
            message,
            tool_activity=cell.denied(activity, error),
            content=cell.failure_content(error, "permission_error", activity),
        )
    notify_after_commit(session, "approval", message.id)
    return message
