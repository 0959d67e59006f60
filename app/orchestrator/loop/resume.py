"""A parked run taken up again (app/orchestrator/scheduling/parking.py).

The run went back to the queue while its calls waited for the user or the phone; the
runner that claims it finds them here: the assistant's stored calls whose cells are still
open (waiting, or approved meanwhile and not yet run), with their tool messages. They are
planned again (tool_calls.py `resume_turn`) and wait, or run, as they would have; then the
loop goes on from the stored conversation.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Agent, Run, ThreadMessage
from app.orchestrator.loop.context import RunnerDeps
from app.orchestrator.loop.history import load_history
from app.orchestrator.scheduling import notify, parking
from app.threads import activity as cell
from app.threads import repository
from app.threads.fence import Lease

logger = logging.getLogger(__name__)


async def park(deps: RunnerDeps, lease: Lease, spent: Mapping[str, Any] | None) -> bool:
    """The run back in the queue with its usage so far, if it only waits (parking.py);
    another process is woken to claim it, this one stops. `Fenced`: it is not ours."""

    async def work(session: AsyncSession) -> bool:
        if not await parking.run_is_parkable(session, lease.run_id):
            return False
        await parking.park_run(session, lease, spent)
        return True

    parked = await deps.write(work)
    if parked:
        notify.relay("queued", lease.run_id)
        logger.info("run %s: parked at shutdown, back in the queue", lease.run_id)
    return parked


@dataclass(frozen=True, slots=True)
class OpenCalls:
    """The calls a parked run left open, in the order the model made them."""

    calls: list[dict[str, Any]]  # the assistant's call dicts
    messages: list[ThreadMessage]  # their tool messages, one per call
    made: int  # tool calls the run made before it parked (its budget's count)


async def open_calls(session: AsyncSession, run_id: UUID) -> OpenCalls | None:
    """The run's open calls, or None: a run that has none starts from its question."""
    rows = list(await session.scalars(repository.run_messages(run_id)))
    tools = [row for row in rows if row.role == "tool"]
    open_by_call = {m.tool_call_id: m for m in tools if cell.is_open(m.tool_activity)}
    if not open_by_call:
        return None
    made: list[dict[str, Any]] = [
        call for row in rows if row.role == "assistant" for call in row.tool_calls or []
    ]
    calls = [call for call in made if call.get("id") in open_by_call]
    return OpenCalls(calls, [open_by_call[call["id"]] for call in calls], len(tools))


async def history(deps: RunnerDeps, run: Run, agent: Agent) -> list[dict[str, Any]]:
    """The conversation as stored, the resumed calls' results included."""
    async with deps.read_sessions() as session:
        return await load_history(session, run.thread_id, agent.system_prompt, run.id)
