"""One turn's planned tool calls, executed: each a `tool` message going in_progress ->
success|failure (a cell prepared while the model wrote the call, preparing.py, is that
message: updated, not created again).

`call_plan.py` has given every call its kind; `_dispatch` runs each kind in one `match`.
The calls run concurrently, each isolated (one failing or raising never discards the
others); their results, or self-correcting errors, go back to the model as tool messages
whose content is stored on the row so later runs see exactly what this one did.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import ThreadMessage
from app.orchestrator.door.llm import ModelTurn
from app.orchestrator.loop import deadlines, delegation
from app.orchestrator.loop.call_plan import (
    AwaitsApproval,
    AwaitsDevice,
    Delegate,
    Duplicate,
    PlannedCall,
    Refused,
    RunTool,
    TurnRules,
    plan_turn,
    tool_message_row,
)
from app.orchestrator.loop.cell_stream import CellStream
from app.orchestrator.loop.context import LoopSpec, RunnerDeps, RunState
from app.orchestrator.loop.input_requests import ask_user
from app.orchestrator.loop.reply import ReplyStream
from app.orchestrator.loop.waiting import wait_for_user
from app.orchestrator.waits.cells import locked_message
from app.threads import activity as cell
from app.threads import open_cells
from app.threads.fence import Fenced
from app.threads.records import StoredMessage
from app.threads.writer import create_messages, creates_alone, update_message
from app.tools.assembly import get_registry
from app.tools.base import ToolContext, ToolResult
from app.tools.bounds import bounded
from app.tools.events import FanOutToolEvents, LoggingToolEvents, ToolCall
from app.tools.preview import call_signature
from app.tools.runtime.executor import SAFE_SYSTEM_ERROR, execute_tool_call, with_preview
from app.tools.unit import CallUnit

logger = logging.getLogger(__name__)
# The runner's loop, for a specialist: its spec and history -> its answer.
RunLoop = Callable[[LoopSpec, list[dict[str, Any]]], Awaitable[delegation.Outcome]]


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """A call once executed: its tool message as last written, what the model reads,
    and the result, unless the user or the phone answered the call (then it is None)."""

    call: PlannedCall
    message: ThreadMessage
    content: str
    result: ToolResult | None

    @property
    def spent_budget(self) -> bool:
        """Refused for the run's spent budget: the loop stops after this turn."""
        return isinstance(self.call, Refused) and self.call.spent_budget

    @property
    def duplicate(self) -> bool:
        """Answered from an identical earlier call (an approved repeat included)."""
        return self.result is not None and self.result.duplicate


@dataclass
class _InFlight:
    """One call's execution state: its message as last written and, while its tool
    runs, the cell stream and the unit of work holding the tool's writes."""

    message: ThreadMessage
    stream: CellStream | None = field(default=None, repr=False)
    unit: CallUnit | None = field(default=None, repr=False)


class ToolCallRunner:
    """One turn's calls, from the model's (or a plan step's) call dicts to their results."""

    def __init__(
        self, deps: RunnerDeps, state: RunState, reply: ReplyStream, run_loop: RunLoop
    ) -> None:
        self.deps, self.state, self.reply, self.run_loop = deps, state, reply, run_loop

    async def execute_turn(
        self,
        spec: LoopSpec,
        turn: ModelTurn,
        *,
        step_id: str | None = None,
        refused: dict[int, ToolResult] | None = None,
        prepared: dict[int, StoredMessage] | None = None,
    ) -> list[CallOutcome]:
        """Plan the calls, record them in one commit, run them concurrently. `refused`
        (by index) fail at once with the given self-correcting result; `prepared` (by
        index) are the calls' cells shown while the model wrote them (preparing.py)."""
        rules = self._rules(spec)
        planned = plan_turn(turn.tool_calls, rules, self.state, step_id=step_id, refused=refused)
        recorded = await self._record(spec, turn, planned, prepared or {})
        return await self._run_all(spec, planned, recorded)

    async def resume_turn(
        self, spec: LoopSpec, calls: list[dict[str, Any]], messages: list[ThreadMessage]
    ) -> list[CallOutcome]:
        """A parked run's open calls (resume.py), planned again: each waits for its answer
        (or runs, approved meanwhile) on its stored message. A call that would no longer
        wait (the agent's tools changed while it was parked) fails: it never runs unasked."""
        planned = [_still_waiting(call) for call in plan_turn(calls, self._rules(spec), self.state)]
        deadlines.opened(messages)
        return await self._run_all(spec, planned, messages)

    def _rules(self, spec: LoopSpec) -> TurnRules:
        settings = self.deps.settings
        return TurnRules(
            spec,
            spec.config.tool_call_budget,
            approval_seconds=settings.approval_ttl_seconds,
            max_depth=settings.delegation_max_depth,
        )

    async def _run_all(
        self, spec: LoopSpec, planned: list[PlannedCall], messages: list[ThreadMessage]
    ) -> list[CallOutcome]:
        pairs = zip(planned, messages, strict=True)
        # A task group, not gather: on a cancel (or a lost lease) every call has ended
        # before this returns, inside the run's deadline, so no call outlives its run.
        try:
            async with asyncio.TaskGroup() as group:
                calls = [group.create_task(self._run_one(spec, *pair)) for pair in pairs]
        except BaseExceptionGroup as failed:  # a call lost the lease: the run stops with it
            raise failed.exceptions[0] from None
        return [call.result() for call in calls]

    async def _record(
        self,
        spec: LoopSpec,
        turn: ModelTurn,
        planned: list[PlannedCall],
        prepared: dict[int, StoredMessage],
    ) -> list[ThreadMessage]:
        """The assistant's tool calls and every call's tool message: one commit. A call
        whose cell was prepared while the model wrote it updates that cell."""
        run, reply = self.state.run, self.reply
        planned_rows = [tool_message_row(call, run.id) for call in planned]
        rows = [row for index, row in enumerate(planned_rows) if index not in prepared]
        if spec.writes_text and reply.message is None:
            rows.insert(0, {  # text that came whole with the calls is written here
                "role": "assistant", "content": turn.text or None, "is_user_facing": bool(turn.text),
                "tool_calls": turn.tool_calls, "run_id": run.id,
            })  # fmt: skip

        async def work(session: AsyncSession) -> list[ThreadMessage]:
            if spec.writes_text and reply.message is not None:
                # made with the calls before any text came (preparing.py): shown if some did
                hidden = turn.text and not reply.message.is_user_facing
                shown = {"is_user_facing": True} if hidden else {}
                await reply.write(
                    session, content=turn.text or None, tool_calls=turn.tool_calls, **shown
                )
            for index, message in sorted(prepared.items()):
                row = planned_rows[index]
                await update_message(
                    session,
                    message,
                    tool_call_id=row["tool_call_id"],
                    is_user_facing=row["is_user_facing"],
                    tool_activity=cell.planned(message.tool_activity, row["tool_activity"]),
                )
            created = iter(await create_messages(session, run.thread_id, rows))
            if len(rows) > len(planned) - len(prepared):
                next(created)  # the assistant message
            return [prepared.get(index) or next(created) for index in range(len(planned))]

        streamed = spec.writes_text and reply.message is not None  # a second statement
        alone = not streamed and not prepared and creates_alone(rows)
        recorded = await (self.deps.write_alone if alone else self.deps.write)(work)
        deadlines.opened(recorded)  # ended with the run or delegation, if still open then
        if spec.writes_text:
            reply.start()
        return recorded

    async def _run_one(
        self, spec: LoopSpec, call: PlannedCall, message: ThreadMessage
    ) -> CallOutcome:
        flight = _InFlight(message)
        outcome = await self._run_to_end(spec, call, flight)
        deadlines.ended(message.id)  # not when cancelled: what encloses it ends its cell
        return outcome

    async def _run_to_end(
        self, spec: LoopSpec, call: PlannedCall, flight: _InFlight
    ) -> CallOutcome:
        try:
            result = await self._dispatch(spec, call, flight)
        except asyncio.CancelledError:
            if flight.stream is not None:
                flight.stream.abandon()
            self._discard_unit(flight)  # a cancelled call leaves nothing behind
            raise
        except Fenced:  # the run is no longer ours: its calls stop with it
            self._discard_unit(flight)
            raise
        except Exception:  # isolation: one broken call never takes its siblings down
            logger.exception("tool call %s (%s) failed in the runner", call.id, call.name)
            result = ToolResult.failure(SAFE_SYSTEM_ERROR, "system_error")
        if result is None:  # answered elsewhere (approval denied, device result, expiry): written
            return CallOutcome(call, flight.message, flight.message.content or "", None)
        if not cell.is_open(flight.message.tool_activity):
            # Ended while the tool ran (its request for input expired): that end was the
            # cell's one terminal write; the tool's own word on it writes nothing more.
            self._discard_unit(flight)
            return CallOutcome(call, flight.message, flight.message.content or "", None)
        content = result.to_model_content(call_signature(call.name, call.input))
        await self._finish(flight, result, content)
        return CallOutcome(call, flight.message, content, result)

    async def _dispatch(
        self, spec: LoopSpec, call: PlannedCall, flight: _InFlight
    ) -> ToolResult | None:
        """The call's result; None when the user or the phone answered it (written)."""
        match call:
            case Refused(result=result):
                return result
            case Delegate():
                answer = await self._ask(spec, call, flight)
                return bounded(answer, self.deps.settings.tool_result_max_bytes)
            case AwaitsDevice(wait_seconds=seconds):
                await self._wait_for_user(flight, seconds)
                return None  # the app's result (or the expiry) is on the message already
            case AwaitsApproval(wait_seconds=wait_seconds):
                await self._wait_for_user(flight, wait_seconds)
                if cell.status_of(flight.message.tool_activity) != cell.IN_PROGRESS:
                    return None  # denied or expired
                return await self._run_tool(spec, call, flight)
            case Duplicate() | RunTool():
                return await self._run_tool(spec, call, flight)

    async def _ask(self, spec: LoopSpec, call: Delegate, flight: _InFlight) -> ToolResult:
        """The specialist's loop, in this run's state: its answer is the call's result,
        and its text streams into the cell as it is written (`tool_output` frames)."""
        settings, specialists = self.deps.settings, self.state.specialists
        assignment = delegation.assign(
            call.id, call.question, call.agent, settings, spec, specialists
        )
        stream = flight.stream = self._stream(flight)
        run = self.state.run
        shown = ToolCall(call.id, call.name, None, call.input or {}, run.id, run.thread_id)
        streamed = 0

        async def output(chunk: str) -> None:
            nonlocal streamed
            if chunk:
                await stream.on_output(shown, streamed, chunk)
                streamed += len(chunk)

        loop_spec = replace(assignment.spec, on_text=output)
        specialist_loop = self.run_loop(loop_spec, assignment.history)
        return await delegation.answer(assignment, specialist_loop, self.close_cells)

    async def close_cells(self, messages: list[ThreadMessage], error_type: str, error: str) -> None:
        """End cells whose call outlived what enclosed it (a delegation): one write each,
        in one transaction, so nothing under an ended call stays open."""
        await self.deps.write(lambda session: end_open_cells(session, messages, error_type, error))

    async def _run_tool(
        self, spec: LoopSpec, call: AwaitsApproval | Duplicate | RunTool, flight: _InFlight
    ) -> ToolResult:
        """Through the executor, with the call as planned (validated once, at planning);
        the run's cache answers a repeated call from the first one's result."""
        flight.stream = self._stream(flight)
        flight.unit = CallUnit(self.deps.session_factory)
        ctx = ToolContext(
            user=self.state.user,
            agent=spec.agent,
            thread_id=self.state.run.thread_id,
            run_id=self.state.run.id,
            tool_call_id=call.id,
            session_factory=self.deps.session_factory,
            http=self.deps.http,
            settings=self.deps.settings,
            state=self.state.tool_state,
            unit=flight.unit,
            ask=lambda asked: ask_user(self.deps, self.state, flight.message, flight.stream, asked),
        )
        return await execute_tool_call(
            get_registry(),
            ctx,
            call.name,
            call.arguments,
            allowed=spec.allowed,
            cache=self.state.cache,
            events=FanOutToolEvents([flight.stream, LoggingToolEvents()]),
            parsed=call.parsed,
        )

    async def _wait_for_user(self, flight: _InFlight, longest: float) -> None:
        async with deadlines.paused(longest):
            flight.message = await wait_for_user(self.deps, flight.message)

    def _stream(self, flight: _InFlight) -> CellStream:
        """Progress and output of the call, written to its message coalesced."""
        message = flight.message

        async def write(activity: cell.Activity) -> None:
            if flight.unit is not None:  # a tool's call (a specialist's has no unit)
                async with flight.unit.held() as session:
                    if session is not None:  # joins the held unit: committed with the outcome
                        await self._update(session, message, tool_activity=activity)
                        return
            await self._write(flight, tool_activity=activity)

        settings = self.deps.settings
        return CellStream(
            message_id=message.id,
            current=lambda: message.tool_activity,
            write=write,
            max_chars=settings.tool_output_max_chars,
            interval=settings.tool_flush_seconds,
        )

    async def _finish(self, flight: _InFlight, result: ToolResult, content: str) -> None:
        """The cell's final state, in one transaction with the call's own writes when it
        succeeded; a failed call's writes are rolled back (the model was told it failed)."""
        latest = await flight.stream.settled() if flight.stream is not None else None
        result = result if result.preview else with_preview(result)
        if not result.ok:
            self._discard_unit(flight)  # the cell goes in a session of its own
        unit = flight.unit.take() if flight.unit is not None and result.ok else None
        await self._write(
            flight,
            session=unit,
            tool_activity=cell.finished(latest or flight.message.tool_activity, result),
            content=content,
        )

    def _discard_unit(self, flight: _InFlight) -> None:
        if flight.unit is not None:
            self.deps.background(flight.unit.discard())

    async def _write(
        self, flight: _InFlight, session: AsyncSession | None = None, **changes: Any
    ) -> None:
        message = flight.message
        await self.deps.write(lambda current: self._update(current, message, **changes), session)

    @staticmethod
    async def _update(session: AsyncSession, message: ThreadMessage, **changes: Any) -> None:
        await update_message(session, message, **changes)


async def end_open_cells(
    session: AsyncSession, messages: list[ThreadMessage], error_type: str, error: str
) -> None:
    """Each of `messages` whose cell is still open (read afresh, under the thread lock:
    an answer may have ended it meanwhile): ended as failure, saying why."""
    for message in messages:
        fresh = await locked_message(session, message.thread_id, message.id)
        if fresh is not None:
            await open_cells.close_cell(session, fresh, error_type=error_type, error=error)


CHANGED_WHILE_PARKED = "The agent's tools changed while this call waited; it was not made."


def _still_waiting(call: PlannedCall) -> PlannedCall:
    if isinstance(call, AwaitsApproval | AwaitsDevice | Refused):
        return call
    result = ToolResult.failure(CHANGED_WHILE_PARKED, "system_error")
    shown = {"id": call.id, "name": call.name, "arguments": call.arguments, "input": call.input}
    return Refused(**shown, step_id=call.step_id, result=result)
