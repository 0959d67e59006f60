"""The loop of one run: model turn -> tool calls -> model turn … -> the answer.

The run's agent streams its text into an assistant message (reply.py: created 30 ms
after the first delta, later text published ephemerally, the final text written at the
end); its tool calls become tool messages, shown from the model's first token of each
call (preparing.py). A specialist the agent delegates to runs the same loop with its own
toolset; its tool activities land in the same thread (marked `input.delegated_by`) and
its answer is the delegating call's result.

Whatever decides a turn's calls (the model, a request's pre-flight `tool_calls`, a
planner's tool step, which its plan yields to this loop: planner.py) they go the one way
of `_execute_turn`: planned (call_plan.py), recorded in one commit, executed
(tool_calls.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator
from dataclasses import replace
from functools import lru_cache, partial
from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from app.agents.delegates import delegate_definition, delegates_for
from app.db.models import Agent, Run, RunStatus
from app.observability import metrics
from app.orchestrator.door import usage
from app.orchestrator.door.llm import LLMError, ModelTurn, context_window, fitted, stream_turn
from app.orchestrator.loop import deadlines, planner, resume
from app.orchestrator.loop.completion import write_completed
from app.orchestrator.loop.context import LoopSpec, RunnerDeps, RunState
from app.orchestrator.loop.delegation import FALLBACK_TYPE, Outcome
from app.orchestrator.loop.history import answered_turn, load_history
from app.orchestrator.loop.images_seen import tell_images_seen
from app.orchestrator.loop.memory_recall import recall_call
from app.orchestrator.loop.outage import (
    DB_UNREACHABLE,
    DB_UNREACHABLE_CELL,
    database_unreachable,
    write_retrying,
)
from app.orchestrator.loop.pre_flight import pre_flight_turn
from app.orchestrator.loop.preparing import PreparingCalls
from app.orchestrator.loop.reply import ReplyStream
from app.orchestrator.loop.tool_calls import CallOutcome, ToolCallRunner
from app.orchestrator.scheduling import runs
from app.threads import fence, open_cells, repository
from app.threads.branches import follow_branch
from app.threads.fence import Fenced, Lease
from app.threads.records import StoredMessage
from app.threads.runs import CANCELLED_BY_USER
from app.tools.assembly import get_registry
from app.tools.base import ToolResult
from app.tools.runtime.toolsets import action_limits, effective_tools, get_agent_type
from app.tools.schema import narrow_actions

logger = logging.getLogger(__name__)
REPEATING = "I stopped here: I kept repeating the same tool calls without making progress."


async def _ignore_text(_: str) -> None:
    return None


class RunExecution:
    def __init__(self, deps: RunnerDeps, run: Run) -> None:
        self.deps, self.run = deps, run
        self.stop_reason: str | None = None  # "cancelled" | "shutdown"
        self.reply = ReplyStream(deps, run)
        self.task: asyncio.Task[None] | None = None
        self.usage = usage.Usage()  # the run's tally, set for its task in `execute`
        # Every write of the run carries its lease (app/threads/fence.py).
        self.lease = Lease(run.id, deps.owner, run.lease_epoch)
        self._ending = False  # `_end` is writing the run's end: it is not cancelled
        self._fence_reported = False

    def stop(self, reason: str) -> None:
        """ "cancelled" | "shutdown" | "fenced" (the lease is lost: stop writing at once)."""
        if self.stop_reason is None and self.task is not None and not self.task.done():
            self.stop_reason = reason
            if not self._ending:
                self.task.cancel()

    # -- lifecycle ---------------------------------------------------------------------
    async def execute(self) -> None:
        timeout = None
        # the model door sums this run's calls into it (a parked run's: onto its earlier)
        self.usage = usage.start_tally(self.run)
        fence.hold(self.lease)  # for this task and every task it starts
        try:
            state, spec, messages = await self._prepare()
            timeout = spec.config.run_timeout_seconds
            async with asyncio.timeout(timeout) as deadline:
                with deadlines.entered(deadlines.Scope(deadline)):
                    await self._main(state, spec, messages)
        except asyncio.CancelledError:
            if (task := asyncio.current_task()) is not None:
                task.uncancel()
            if self.stop_reason == "shutdown" and await self._park():
                return
            if self.stop_reason == "cancelled":
                await self._end(RunStatus.CANCELLED, None, "cancelled", CANCELLED_BY_USER)
            else:
                await self._end(
                    RunStatus.FAILED,
                    "Interrupted: the server shut down.",
                    "system_error",
                    runs.INTERRUPTED,
                )
        except Fenced:  # refused before the worker could stop us (its task is cancelled)
            self.stop_reason = "fenced"
            await self._end(RunStatus.FAILED, None, "system_error", runs.INTERRUPTED)
        except TimeoutError:
            await self._end(
                RunStatus.FAILED,
                f"The run took longer than {timeout:g} seconds.",
                "timeout",
                "The run timed out.",
            )
        except LLMError as exc:
            await self._end(
                RunStatus.FAILED, exc.message, "system_error", "The run failed: " + exc.message
            )
        except Exception as exc:
            if database_unreachable(exc):
                logger.warning("run %s: the database is unreachable", self.run.id)
                await self._end(
                    RunStatus.FAILED, DB_UNREACHABLE, "system_error", DB_UNREACHABLE_CELL
                )
                return
            logger.exception("run %s failed", self.run.id)
            await self._end(
                RunStatus.FAILED,
                "Internal error while running the agent.",
                "system_error",
                runs.INTERRUPTED,
            )

    async def _end(
        self, status: RunStatus, error: str | None, error_type: str, activity_error: str
    ) -> None:
        """Keep the text streamed so far, close open activities, end the run: one commit.
        Fenced (the lease is lost): nothing, the run is someone else's to end."""

        async def work(session: AsyncSession) -> None:
            await self.reply.keep_streamed_text(session)
            await open_cells.close_open_activities(
                session, self.run.id, error_type=error_type, error=activity_error
            )
            spent = usage.end_values(self.usage)
            await runs.finish_run(session, self.lease, status, error, spent)

        self._ending = True
        try:
            await self.reply.settle()
            await self.deps.settle()  # writes of the cancelled tasks land first
            if self.stop_reason != "fenced":
                seconds = self.deps.settings.runner_db_retry_seconds
                await write_retrying(self.deps, work, seconds=seconds)
        except Fenced:
            self.stop_reason = "fenced"
        except Exception:  # the lease reaper will still end it
            logger.exception("could not end run %s", self.run.id)
        if self.stop_reason == "fenced":
            self._report_fenced()

    def _report_fenced(self) -> None:
        """One warning and one count per fenced run."""
        if self._fence_reported:
            return
        self._fence_reported = True
        metrics.fenced("run")
        lease = self.lease
        logger.warning(
            "run %s: fenced, its lease (owner %s, epoch %d) is no longer this runner's; "
            "stopped without writing more",
            lease.run_id,
            lease.owner,
            lease.epoch,
        )

    async def _prepare(self) -> tuple[RunState, LoopSpec, list[dict[str, Any]]]:
        if self.run.options and (switch_to := self.run.options.get("switch_to")):
            thread_id, run_id = self.run.thread_id, self.run.id
            await self.deps.write(lambda s: follow_branch(s, thread_id, switch_to, run_id))
        async with self.deps.read_sessions() as session:
            params = {"thread_id": self.run.thread_id, "agent_id": self.run.agent_id}
            row = (await session.execute(repository.RUN_CONTEXT, params)).first()
            if row is None:
                raise LookupError("thread or agent is gone")
            thread, agent, user = row
            options = self.run.options or {}
            config = get_agent_type(agent.agent_type) or FALLBACK_TYPE
            allowed = effective_tools(agent.agent_type, agent.enabled_tools)
            narrow = options.get("tools")
            if narrow is not None:
                allowed = [name for name in allowed if name in narrow]
            specialists: list[Agent] = []
            if config.delegation:
                params = {"owner_id": user.id, "agent_id": agent.id}
                specialists = list(await session.scalars(repository.SPECIALISTS, params))
            delegates, disabled = delegates_for(
                specialists, narrow=narrow, enabled_tools=agent.enabled_tools
            )
            history = await load_history(session, thread.id, agent.system_prompt, self.run.id)
        state = RunState(run=self.run, user=user, options=options, specialists=specialists)
        spec = LoopSpec(
            agent=agent,
            config=config,
            allowed=allowed,
            actions=action_limits(agent.agent_type, agent.enabled_tools),
            delegates=delegates,
            disabled_delegates=disabled,
        )
        return state, spec, history

    async def _main(self, state: RunState, spec: LoopSpec, messages: list[dict[str, Any]]) -> None:
        if await self._resume(state, spec):  # a parked run: its calls answered, go on
            messages = await resume.history(self.deps, self.run, spec.agent)
        else:
            await tell_images_seen(self.deps, self.run, spec.agent, messages)
            if recalled := await recall_call(self.deps, state, spec, messages):
                await self._execute_turn(state, spec, ModelTurn(tool_calls=[recalled]), messages)
            if state.options.get("tool_calls"):
                await self._pre_execute(state, spec, messages)
        if spec.config.planner:  # plan first, then run the plan's steps (planner.py)
            text, note = await self._follow_plan(state, spec, messages)
        else:
            text, note = await self._loop(state, spec, messages)

        spent = usage.end_values(self.usage)  # written with the run's end
        # None, normally: every call ends within its turn. Any left ends with the run.
        left_open = [m for scope in deadlines.enclosing() for m in scope.unended()]
        await write_completed(self.deps, self.reply, self.lease, (text, note), spent, left_open)
        self.reply.start()  # written: nothing left for an abrupt end to keep

    # -- parked: back in the queue, taken up again (scheduling/parking.py, resume.py) -----
    async def _park(self) -> bool:
        """At shutdown, a run that only waits for the user or the phone goes back to the
        queue (True: parked, or fenced: not ours to end either way)."""
        self._ending = True
        try:
            await self.reply.settle()
            await self.deps.settle()  # the cancelled calls' writes land first
            return await resume.park(self.deps, self.lease, usage.end_values(self.usage))
        except Fenced:
            self.stop_reason = "fenced"
            self._report_fenced()
            return True
        except Exception:
            logger.exception("could not park run %s", self.run.id)
            return False

    async def _resume(self, state: RunState, spec: LoopSpec) -> bool:
        """A parked run's open calls waited on (or run) again; False: a run not parked."""
        async with self.deps.read_sessions() as session:
            found = await resume.open_calls(session, self.run.id)
        if found is None:
            return False
        state.calls_made = found.made - len(found.calls)  # planning counts these again
        calls = ToolCallRunner(self.deps, state, self.reply, partial(self._loop, state))
        await calls.resume_turn(spec, found.calls, found.messages)
        return True

    # -- the loop ------------------------------------------------------------------------
    def _tools_for(self, spec: LoopSpec) -> list[dict[str, Any]]:
        # a fresh copy each time: providers' adapters may edit the dicts they are given
        tools: list[dict[str, Any]] = msgspec.json.decode(
            _function_definitions(tuple(spec.allowed), get_registry().generation)
        )
        for tool in tools:  # an agent allowed some actions only is offered only those
            function = tool["function"]
            if (only := spec.actions.get(function["name"])) is not None:
                function["parameters"] = narrow_actions(function["parameters"], only)
        offered = spec.delegates.items()
        return tools + [delegate_definition(name, agent) for name, agent in offered]

    async def _loop(
        self, state: RunState, spec: LoopSpec, messages: list[dict[str, Any]]
    ) -> Outcome:
        tools = self._tools_for(spec) or None
        target = self.deps.model_target(spec.agent, spec.model)
        window = context_window(target.model, self.deps.settings.llm_context_tokens)
        limit, repeats = spec.config.step_limit, 0
        for _ in range(limit):
            prompt = await fitted(target.model, messages, tools, window=window)
            turn, prepared = await self._model_turn(spec, target, prompt, tools)
            if not turn.tool_calls:
                return turn.text, None
            outcomes = await self._execute_turn(state, spec, turn, messages, prepared=prepared)
            if any(done.spent_budget for done in outcomes):
                return (
                    None,
                    f"I stopped here: this run used up its budget of {spec.config.tool_call_budget} tool calls.",
                )
            repeats = repeats + 1 if all(done.duplicate for done in outcomes) else 0
            if repeats >= 2:
                return None, REPEATING
        return (
            None,
            f"I stopped here: I reached the limit of {limit} steps for one request before finishing.",
        )

    async def _model_turn(
        self, spec: LoopSpec, target: Any, prompt: list[dict[str, Any]], tools: Any
    ) -> tuple[ModelTurn, dict[int, StoredMessage]]:
        """The model's turn, and its calls' cells shown while it wrote them."""
        reply = self.reply if spec.writes_text else None  # a specialist's text: its ask_* cell
        on_text = reply.append if reply is not None else spec.on_text or _ignore_text
        async with PreparingCalls(self.deps, self.run, spec, reply).streaming() as calls:
            turn = await stream_turn(target, prompt, tools, on_text, on_calls=calls.seen)
        return turn, calls.cells

    async def _follow_plan(
        self, state: RunState, spec: LoopSpec, messages: list[dict[str, Any]]
    ) -> Outcome:
        """A planner's run: the plan yields its steps, this loop executes each one and
        sends back what the plan needs to go on (a tool step's final cell)."""
        outcome: Outcome = (None, None)
        steps = planner.PlanExecution(self.deps, state, spec).steps(messages)
        async with contextlib.aclosing(steps):
            answer: planner.StepAnswer = None
            while (step := await _next_step(steps, answer)) is not None:
                match step:
                    case planner.ToolStep(call=call, step_id=step_id):
                        turn = ModelTurn(tool_calls=[call])
                        [done] = await self._execute_turn(state, spec, turn, messages, step_id)
                        answer = done.message.tool_activity
                    case planner.AnswerStep(model=model):  # one turn without tools: the reply
                        no_tools = replace(spec, allowed=[], delegates={}, model=model)
                        outcome = await self._loop(state, no_tools, messages)
                        answer = None
        return outcome

    async def _pre_execute(
        self, state: RunState, spec: LoopSpec, messages: list[dict[str, Any]]
    ) -> None:
        """Request metadata `tool_calls`: run before the model (pre_flight.py)."""
        turn, refused = pre_flight_turn(state, spec)
        await self._execute_turn(state, spec, turn, messages, None, refused)

    async def _execute_turn(
        self,
        state: RunState,
        spec: LoopSpec,
        turn: ModelTurn,
        messages: list[dict[str, Any]],
        step_id: str | None = None,
        refused: dict[int, ToolResult] | None = None,
        prepared: dict[int, StoredMessage] | None = None,  # cells shown as the model wrote
    ) -> list[CallOutcome]:
        """The turn's calls planned, recorded and run (tool_calls.py); the assistant's
        calls and their results are appended to `messages` for the next model turn."""
        # a delegated call runs the specialist's loop in this run's state
        calls = ToolCallRunner(self.deps, state, self.reply, partial(self._loop, state))
        outcomes = await calls.execute_turn(
            spec, turn, step_id=step_id, refused=refused, prepared=prepared
        )
        messages.extend(answered_turn(turn, outcomes))
        return outcomes


async def _next_step(
    steps: AsyncGenerator[planner.StepRequest, planner.StepAnswer], answer: planner.StepAnswer
) -> planner.StepRequest | None:
    try:
        return await steps.asend(answer)
    except StopAsyncIteration:
        return None


@lru_cache(maxsize=256)
def _function_definitions(names: tuple[str, ...], generation: tuple[int, ...] = ()) -> bytes:
    """Generating JSON Schemas takes milliseconds; builtin tools do not change in a process,
    MCP servers' tools may (`generation` changes with them: app/tools/mcp/catalog.py)."""
    return msgspec.json.encode(get_registry().function_definitions(names))
