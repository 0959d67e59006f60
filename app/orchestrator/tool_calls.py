"""One model turn's tool calls: each a `tool` message going in_progress -> success|failure.

The calls run concurrently, each isolated (one failing or raising never discards the
others); their results, or self-correcting errors, go back to the model as tool messages
whose content is stored on the row so later runs see exactly what this one did.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from app.db.models import Agent, ThreadMessage
from app.orchestrator.approvals import wait_for_decision
from app.orchestrator.context import LoopSpec, RunnerDeps, RunState
from app.threads import activity as cell
from app.threads.writer import update_message
from app.tools.base import ToolContext, ToolResult
from app.tools.executor import SAFE_SYSTEM_ERROR, execute_tool_call, parse_call
from app.tools.validation import decode_arguments

logger = logging.getLogger(__name__)
Delegate = Callable[["PlannedCall", Agent], Awaitable[ToolResult]]


@dataclass
class PlannedCall:
    id: str
    name: str
    arguments: str | dict[str, Any]
    input: dict[str, Any] | None
    status: str = cell.IN_PROGRESS
    user_facing: bool = True
    delegate: Agent | None = None
    immediate: ToolResult | None = None  # decided without running (e.g. budget spent)
    result: ToolResult | None = None
    step_id: str | None = None  # the plan step this call executes (planner runs)
    message: ThreadMessage | None = field(default=None, repr=False)


def _input_of(arguments: str | dict[str, Any]) -> dict[str, Any] | None:
    decoded = decode_arguments(arguments)
    return decoded if isinstance(decoded, dict) else None


def plan_call(call: dict[str, Any], spec: LoopSpec, state: RunState, budget: int) -> PlannedCall:
    function = call.get("function") or {}
    name, arguments = str(function.get("name") or ""), function.get("arguments") or ""
    planned = PlannedCall(id=call["id"], name=name, arguments=arguments, input=_input_of(arguments))
    if state.calls_made >= budget:
        planned.immediate = ToolResult.failure(
            f"The tool-call budget of this run ({budget} calls) is used up; the call was not made.",
            "user_error",
            suggestion="Answer with what you have.",
        )
    elif name in spec.delegates:
        planned.delegate = spec.delegates[name]
    else:
        parsed = parse_call(name, arguments, allowed=spec.allowed)
        if not isinstance(parsed, ToolResult):
            tool, action, params = parsed
            given = {k: v for k, v in msgspec.to_builtins(params).items() if v is not None}
            planned.input = {"action": action, **given}
            planned.user_facing = tool.is_user_facing_call(action)
            if tool.needs_confirmation(action):
                planned.status = cell.AWAITING_APPROVAL
    state.calls_made += planned.immediate is None
    if spec.delegated_by is not None:
        planned.input = {**(planned.input or {}), "delegated_by": spec.delegated_by}
    return planned


def tool_message_fields(
    planned: PlannedCall, state: RunState, approval_ttl: float
) -> dict[str, Any]:
    """The new tool message of a planned call (status in_progress or awaiting_approval)."""
    return {
        "role": "tool",
        "run_id": state.run.id,
        "tool_call_id": planned.id,
        "is_user_facing": planned.user_facing,
        "tool_activity": cell.started(
            planned.id,
            planned.name,
            planned.input,
            approval_ttl=approval_ttl if planned.status == cell.AWAITING_APPROVAL else None,
            step_id=planned.step_id,
        ),
    }


class ToolCallRunner:
    def __init__(self, deps: RunnerDeps, state: RunState, delegate: Delegate) -> None:
        self.deps, self.state, self.delegate = deps, state, delegate

    async def run_all(self, spec: LoopSpec, calls: list[PlannedCall]) -> list[dict[str, Any]]:
        contents = await asyncio.gather(*(self._run_one(spec, call) for call in calls))
        return [
            {"role": "tool", "tool_call_id": call.id, "content": content}
            for call, content in zip(calls, contents, strict=True)
        ]

    async def _run_one(self, spec: LoopSpec, planned: PlannedCall) -> str:
        try:
            result = await self._result(spec, planned)
        except asyncio.CancelledError:
            raise
        except Exception:  # isolation: one broken call never takes its siblings down
            logger.exception("tool call %s (%s) failed in the runner", planned.id, planned.name)
            result = ToolResult.failure(SAFE_SYSTEM_ERROR, "system_error")
        planned.result = result
        if result is None:  # decided elsewhere (denied or expired approval): already written
            assert planned.message is not None
            return planned.message.content or ""
        await self._finish(planned, result)
        return result.to_model_content()

    async def _result(self, spec: LoopSpec, planned: PlannedCall) -> ToolResult | None:
        if planned.immediate is not None:
            return planned.immediate
        if planned.delegate is not None:
            return await self.delegate(planned, planned.delegate)
        if planned.status == cell.AWAITING_APPROVAL:
            assert planned.message is not None
            async with self.state.deadline_paused(self.deps.settings.approval_ttl_seconds):
                planned.message = await wait_for_decision(self.deps, planned.message)
            if cell.status_of(planned.message.tool_activity) != cell.IN_PROGRESS:
                return None
        ctx = ToolContext(
            user=self.state.user,
            agent=spec.agent,
            thread_id=self.state.run.thread_id,
            run_id=self.state.run.id,
            tool_call_id=planned.id,
            session_factory=self.deps.session_factory,
            http=self.deps.http,
            settings=self.deps.settings,
            progress=self._progress_writer(planned),
            state=self.state.tool_state,
        )
        return await execute_tool_call(
            ctx, planned.name, planned.arguments, allowed=spec.allowed, cache=self.state.cache
        )

    def _progress_writer(self, planned: PlannedCall) -> Callable[..., Awaitable[None]]:
        async def progress(
            display_message: str | None = None, data: dict[str, Any] | None = None
        ) -> None:
            assert planned.message is not None
            changed = cell.progressed(
                planned.message.tool_activity, display_message=display_message, data=data
            )
            await self._write(planned, tool_activity=changed)

        return progress

    async def _finish(self, planned: PlannedCall, result: ToolResult) -> None:
        assert planned.message is not None
        await self._write(
            planned,
            tool_activity=cell.finished(planned.message.tool_activity, result),
            content=result.to_model_content(),
        )

    async def _write(self, planned: PlannedCall, **changes: Any) -> None:
        message = planned.message
        assert message is not None

        async def work(session: Any) -> None:
            session.add(message)  # re-attach the detached row: no SELECT needed
            await update_message(session, message, **changes)

        await self.deps.write(work)
