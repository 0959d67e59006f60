"""Tool calls that need the user's confirmation: the decision.

Approve -> `in_progress` (the runner then executes it); deny -> `failure` with
`permission_error`; expiry -> `failure` with `timeout` (no one decided: not a denial); the
model is told so. The wait and its answer path: app/orchestrator/waits/cells.py.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Thread, ThreadMessage
from app.orchestrator.waits.cells import APPROVAL, Answered, answer
from app.threads import activity as cell
from app.threads.schemas import ApprovalDecision


def _decided(decision: ApprovalDecision, activity: dict[str, Any]) -> Answered:
    if decision.approve:
        return Answered(cell.approved(activity))
    error = "The user denied this action." + (
        f" Reason: {decision.reason}" if decision.reason else ""
    )
    return Answered(
        cell.denied(activity, error), cell.failure_content(error, "permission_error", activity)
    )


async def decide(
    session: AsyncSession, thread: Thread, message_id: UUID, decision: ApprovalDecision
) -> ThreadMessage:
    return await answer(
        session, thread, message_id, APPROVAL, lambda activity: _decided(decision, activity)
    )
