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

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Agent, ThreadMessage
from app.orchestrator import delegation
from app.orchestrator.cell_stream import CellStream
from app.orchestrator.context import LoopSpec, RunnerDeps, RunState
from app.orchestrator.waits import wait_for_user
from app.threads import activity as cell
from app.threads.writer import update_message
from app.tools.base import ToolContext, ToolResult
from app.tools.device import validate_device_call
from app.tools.events import FanOutToolEvents, LoggingToolEvents
from app.tools.executor import (
    SAFE_SYSTEM_ERROR,
    execute_tool_call,
    parse_call,
    parsed_input,
    with_preview,
)
from app.tools.toolsets import get_device_tool
from app.tools.unit import CallUnit
from app.tools.validation import ParsedCall, decode_arguments

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
    # an ask_* the loop may not make (disabled, unknown, depth), or a device call's
    # arguments off its schema: the cell fails at once and the model corrects itself
    refused: ToolResult | None = None
    parsed: ParsedCall | ToolResult | None = None  # validated once, here; run as it is
    start_message: str | None = None  # the tool's own word for the running cell
    result: ToolResult | None = None
    # awaiting_device: how long the phone has to answer; awaiting_approval: how long the
    # user has (the agent type's or tool's `approval_wait`; infinite: until answered)
    wait_seconds: float | None = None
    step_id: str | None = None  # the plan step this call executes (planner runs)
    message: ThreadMessage | None = field(default=None, repr=False)
    stream: CellStream | None = field(default=None, repr=False)  # while the tool runs
    unit: CallUnit | None = field(default=None, repr=False)  # its writes, held for the cell


def _input_of(arguments: str | dict[str, Any]) -> dict[str, Any] | None:
    decoded = decode_arguments(arguments)
    return decoded if isinstance(decoded, dict) else None


def plan_call(
    call: dict[str, Any],
    spec: LoopSpec,
    state: RunState,
    budget: int,
    *,
    approval_ttl: float,
    max_depth: int = 1,
) -> PlannedCall:
    function = call.get("function") or {}
    name, arguments = str(function.get("name") or ""), function.get("arguments") or ""
    planned = PlannedCall(id=call["id"], name=name, arguments=arguments, input=None)
    if state.calls_made >= budget:
        planned.immediate = ToolResult.failure(
            f"The tool-call budget of this run ({budget} calls) is used up; the call was not made.",
            "user_error",
            suggestion="Answer with what you have.",
        )
    elif name in spec.delegates:
        planned.delegate = spec.delegates[name]
    elif name in spec.allowed and (device := get_device_tool(name)) is not None:
        _plan_device_call(planned, device, arguments)
    elif spec.config.delegation and delegation.is_delegate_name(name):
        planned.refused = delegation.refusal(name, spec, max_depth)
    else:
        planned.parsed = parse_call(name, arguments, allowed=spec.allowed)
        if not isinstance(planned.parsed, ToolResult):
            tool, action, params = planned.parsed
            planned.input = parsed_input(action, params)
            planned.user_facing = tool.is_user_facing_call(action)
            planned.start_message = tool.start_message(action, params)
            if tool.needs_confirmation(action):
                planned.status = cell.AWAITING_APPROVAL
                planned.wait_seconds = spec.config.approval_wait_seconds(name, approval_ttl)
    if planned.input is None:  # not a valid call of ours: the arguments as they came
        planned.input = _input_of(arguments)
    state.calls_made += planned.immediate is None
    if spec.delegated_by is not None:
        planned.input = {**(planned.input or {}), "delegated_by": spec.delegated_by}
    return planned


def _plan_device_call(planned: PlannedCall, device: Any, arguments: Any) -> None:
    """The phone runs it: valid arguments make the cell wait for the device's answer."""
    checked = validate_device_call(device, arguments)
    if isinstance(checked, ToolResult):
        planned.refused = checked  # the cell fails at once; the model corrects itself
        return
    planned.input = checked
    planned.user_facing = device.is_user_facing
    planned.status = cell.AWAITING_DEVICE
    planned.wait_seconds = device.timeout_seconds


def tool_message_fields(
    planned: PlannedCall, state: RunState, approval_ttl: float
) -> dict[str, Any]:
    """The new tool message of a planned call (in_progress, awaiting_approval or
    awaiting_device)."""
    return {
        "role": "tool",
        "run_id": state.run.id,
        "tool_call_id": planned.id,
        "is_user_facing": planned.user_facing,
        "tool_activity": cell.started(
            planned.id,
            planned.name,
            planned.input,
            approval_ttl=(planned.wait_seconds or approval_ttl)
            if planned.status == cell.AWAITING_APPROVAL
            else None,
            device_ttl=planned.wait_seconds if planned.status == cell.AWAITING_DEVICE else None,
            display_message=planned.start_message,
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
            if planned.stream is not None:
                planned.stream.abandon()
            self._discard_unit(planned)  # a cancelled call leaves nothing behind
            raise
        except Exception:  # isolation: one broken call never takes its siblings down
            logger.exception("tool call %s (%s) failed in the runner", planned.id, planned.name)
            result = ToolResult.failure(SAFE_SYSTEM_ERROR, "system_error")
        planned.result = result
        if result is None:  # answered elsewhere (approval denied, device result, expiry): written
            assert planned.message is not None
            return planned.message.content or ""
        await self._finish(planned, result)
        return result.to_model_content()

    async def _result(self, spec: LoopSpec, planned: PlannedCall) -> ToolResult | None:
        if planned.immediate is not None:
            return planned.immediate
        if planned.refused is not None:
            return planned.refused
        if planned.delegate is not None:
            return await self.delegate(planned, planned.delegate)
        if planned.status == cell.AWAITING_DEVICE:
            await self._wait_for_user(planned, planned.wait_seconds or 0)
            return None  # the app's result (or the expiry) is on the message already
        if planned.status == cell.AWAITING_APPROVAL:
            await self._wait_for_user(
                planned, planned.wait_seconds or self.deps.settings.approval_ttl_seconds
            )
            assert planned.message is not None
            if cell.status_of(planned.message.tool_activity) != cell.IN_PROGRESS:
                return None
        planned.stream = self._stream(planned)
        planned.unit = CallUnit(self.deps.session_factory)
        ctx = ToolContext(
            user=self.state.user,
            agent=spec.agent,
            thread_id=self.state.run.thread_id,
            run_id=self.state.run.id,
            tool_call_id=planned.id,
            session_factory=self.deps.session_factory,
            http=self.deps.http,
            settings=self.deps.settings,
            state=self.state.tool_state,
            unit=planned.unit,
        )
        return await execute_tool_call(
            ctx,
            planned.name,
            planned.arguments,
            allowed=spec.allowed,
            cache=self.state.cache,
            events=FanOutToolEvents([planned.stream, LoggingToolEvents()]),
            parsed=planned.parsed,
        )

    async def _wait_for_user(self, planned: PlannedCall, longest: float) -> None:
        assert planned.message is not None
        async with self.state.deadline_paused(longest):
            planned.message = await wait_for_user(self.deps, planned.message)

    def _stream(self, planned: PlannedCall) -> CellStream:
        """Progress and output of the call, written to its message coalesced."""
        message = planned.message
        assert message is not None

        async def write(activity: cell.Activity) -> None:
            assert planned.unit is not None
            async with planned.unit.held() as session:
                if session is not None:  # joins the held unit: committed with the outcome
                    await self._update(session, message, tool_activity=activity)
                    return
            await self._write(planned, tool_activity=activity)

        settings = self.deps.settings
        return CellStream(
            message_id=message.id,
            current=lambda: message.tool_activity,
            write=write,
            max_chars=settings.tool_output_max_chars,
            interval=settings.tool_flush_seconds,
        )

    async def _finish(self, planned: PlannedCall, result: ToolResult) -> None:
        """The cell's final state, in one transaction with the call's own writes when it
        succeeded; a failed call's writes are rolled back (the model was told it failed)."""
        assert planned.message is not None
        latest = await planned.stream.settled() if planned.stream is not None else None
        result = result if result.preview else with_preview(result)
        if not result.ok:
            self._discard_unit(planned)  # the cell goes in a session of its own
        unit = planned.unit.take() if planned.unit is not None and result.ok else None
        await self._write(
            planned,
            session=unit,
            tool_activity=cell.finished(latest or planned.message.tool_activity, result),
            content=result.to_model_content(),
        )

    def _discard_unit(self, planned: PlannedCall) -> None:
        if planned.unit is not None:
            self.deps.background(planned.unit.discard())

    async def _write(
        self, planned: PlannedCall, session: AsyncSession | None = None, **changes: Any
    ) -> None:
        message = planned.message
        assert message is not None
        await self.deps.write(lambda current: self._update(current, message, **changes), session)

    @staticmethod
    async def _update(session: AsyncSession, message: ThreadMessage, **changes: Any) -> None:
        session.add(message)  # re-attach the detached row: no SELECT needed
        await update_message(session, message, **changes)
