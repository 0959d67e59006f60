"""A planner agent's run: plan first (strict JSON), then execute the plan step by step.

1. A plan cell (an assistant message with `plan`, app/threads/plan.py) appears at once,
   `in_progress` with no steps, while the model plans (response_format json_schema,
   through the same door as every model call). An invalid plan gets one retry that
   tells the model what was wrong; a second invalid plan ends the run `failed` with the
   reason, and the plan cell shows it (`status: error`, `error`).
2. Steps run in order, each pending -> in_progress -> ok | error, every change a new
   `seq` of the plan cell:
   - tool: one ordinary tool call (its own tool cell, approvals, budget, duplicate
     check), its `tool_activity.step_id` the step's id;
   - memory: a recall from the user's memories (args.query: a search; none: the most
     recent), handed to the completion as context;
   - completion: the answer, streamed like any reply (the model gets no tools here).
   The plan does not run calls or model turns itself: `PlanExecution.steps` yields a
   `ToolStep` or the `AnswerStep` to the runner's loop, which executes it as it executes
   every turn (runner.py), and sends back a tool step's final cell.
3. The rule on failure: once a memory or tool step fails, the later memory and tool
   steps are `skipped` (they may depend on it, and a side effect built on a failed
   lookup is worse than none); the completion always runs and is told what failed.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.agents.delegates import delegate_definition
from app.db.models import ThreadMessage
from app.memories import services as memories
from app.orchestrator.door.llm import LLMError, context_window, fitted, stream_turn
from app.orchestrator.door.profiles import load_profiles
from app.orchestrator.loop import plan_draft
from app.orchestrator.loop.context import LoopSpec, RunnerDeps, RunState
from app.threads import activity as cell
from app.threads import plan as cells
from app.threads.activity import Activity
from app.threads.plan import PlanStep, PlanStepStatus
from app.threads.writer import create_message, update_message
from app.tools.assembly import get_registry
from app.tools.schema import narrow_actions

logger = logging.getLogger(__name__)
MEMORY_TOOL = "memory"
RECALL_LIMIT = 5
RECALLED_CHARS = 500


@dataclass(frozen=True, slots=True)
class ToolStep:
    """Make this call as the plan step `step_id`; the loop sends back its final cell."""

    call: dict[str, Any]  # OpenAI format, as a model turn's call
    step_id: str


@dataclass(frozen=True, slots=True)
class AnswerStep:
    """Stream the answer, without tools: `messages` end with what the plan did; `model`:
    a remote completion's model (`<profile>/<model>`), else the agent's."""

    model: str | None = None


StepRequest = ToolStep | AnswerStep
StepAnswer = Activity | None  # what the loop sends back: a tool step's final cell


async def _ignore_text(_: str) -> None:
    return None


class PlanExecution:
    def __init__(self, deps: RunnerDeps, state: RunState, spec: LoopSpec) -> None:
        self.deps, self.state, self.spec = deps, state, spec
        self.tools = [*spec.allowed, *spec.delegates]
        self.memory = MEMORY_TOOL in spec.allowed
        self.message: ThreadMessage | None = None
        self.plan: dict[str, Any] = {}

    async def steps(
        self, messages: list[dict[str, Any]]
    ) -> AsyncGenerator[StepRequest, StepAnswer]:
        """The plan's steps for the loop to execute; memory steps are the plan's own."""
        await self._show(cells.planning(), create=True)
        steps = await self._make_plan(messages)
        failed: str | None = None
        for step in steps[:-1]:
            if failed is not None:
                reason = f"Skipped: step {failed} failed."
                await self._step(step.id, PlanStepStatus.SKIPPED, error=reason)
                continue
            if step.action == "memory":
                ok = await self._memory(step, messages)
            else:
                call = await self._tool_started(step)
                activity = yield ToolStep(call, step.id)  # the loop ran it: its final cell
                ok = await self._tool_ended(step, activity)
            failed = None if ok else step.id
        completion = steps[-1]
        model = plan_draft.remote_model(completion)
        routed = {"detail": f"Answered by {model}"} if model else {}
        await self._step(completion.id, PlanStepStatus.IN_PROGRESS, **routed)
        messages.append({"role": "system", "content": self._summary(completion)})
        yield AnswerStep(model)
        done = cells.step_changed(self.plan, completion.id, PlanStepStatus.OK)
        await self._show(cells.completed(done))

    # -- planning ----------------------------------------------------------------------
    async def _make_plan(self, messages: list[dict[str, Any]]) -> list[PlanStep]:
        budget = self.spec.config.tool_call_budget
        definitions = get_registry().function_definitions(self.spec.allowed)
        for definition in definitions:  # a tool the agent may use for some actions only
            function = definition["function"]
            if (only := self.spec.actions.get(function["name"])) is not None:
                function["parameters"] = narrow_actions(function["parameters"], only)
        definitions += [
            delegate_definition(name, agent) for name, agent in self.spec.delegates.items()
        ]
        settings = self.deps.settings
        profiles = sorted(load_profiles(settings.llm_profiles_file, settings.llm_profiles))
        ask = plan_draft.instructions(
            definitions, memory=self.memory, budget=budget, profiles=profiles
        )
        target = self.deps.model_target(self.spec.agent)
        window = context_window(target.model, self.deps.settings.llm_context_tokens)
        prompt = await fitted(
            target.model, [*messages, {"role": "system", "content": ask}], None, window=window
        )
        errors: list[str] = []
        for attempt in (1, 2):
            turn = await stream_turn(
                target, prompt, None, _ignore_text, response_format=plan_draft.RESPONSE_FORMAT
            )
            draft = plan_draft.decode(turn.text)
            errors = [draft] if isinstance(draft, str) else plan_draft.problems(
                draft, self.tools, memory=self.memory, budget=budget, profiles=profiles
            )  # fmt: skip
            if not errors and not isinstance(draft, str):
                steps = plan_draft.steps_of(draft)
                await self._show(cells.planned(steps, draft.description, attempt))
                return steps
            prompt += [
                {"role": "assistant", "content": turn.text or ""},
                {"role": "user", "content": plan_draft.correction(errors)},
            ]
        reason = "The model did not produce a valid plan: " + " ".join(errors)
        await self._show(cells.rejected(reason, attempts=2))
        raise LLMError("invalid_plan", reason)

    # -- steps -------------------------------------------------------------------------
    async def _tool_started(self, step: PlanStep) -> dict[str, Any]:
        """The step's call, its plan step shown running with the call's id."""
        call_id = f"call_plan_{secrets.token_hex(6)}"
        await self._step(step.id, PlanStepStatus.IN_PROGRESS, tool_call_id=call_id)
        return {
            "id": call_id,
            "type": "function",
            "function": {"name": step.tool or "", "arguments": json.dumps(step.args or {})},
        }

    async def _tool_ended(self, step: PlanStep, activity: Activity | None) -> bool:
        if cell.status_of(activity) == cell.SUCCESS:
            detail = (activity or {}).get("display_message") or f"{step.tool} succeeded"
            await self._step(step.id, PlanStepStatus.OK, detail=detail)
            return True
        error = (activity or {}).get("error") or "The tool call failed."
        await self._step(step.id, PlanStepStatus.ERROR, error=error)
        return False

    async def _memory(self, step: PlanStep, messages: list[dict[str, Any]]) -> bool:
        await self._step(step.id, PlanStepStatus.IN_PROGRESS)
        args = step.args or {}
        query = args.get("query") if isinstance(args.get("query"), str) else None
        user_id = self.state.user.id
        try:
            async with self.deps.read_sessions() as session:
                found = (
                    await memories.search_memories(session, user_id, query, RECALL_LIMIT)
                    if query
                    else await memories.recent_memories(session, user_id, RECALL_LIMIT)
                )
                recalled = [(m.key, m.content[:RECALLED_CHARS]) for m in found]
        except Exception:  # a failed recall is a failed step, not a failed run
            logger.exception("run %s: memory step %s failed", self.state.run.id, step.id)
            await self._step(step.id, PlanStepStatus.ERROR, error="Recalling memories failed.")
            return False
        lines = [f"- {key + ': ' if key else ''}{content}" for key, content in recalled]
        about = f" for {query!r}" if query else ""
        body = "\n".join(lines) if lines else "(nothing found)"
        messages.append(
            {"role": "system", "content": f"Memory recall (step {step.id}){about}:\n{body}"}
        )
        detail = f"Recalled {len(recalled)} memor{'y' if len(recalled) == 1 else 'ies'}"
        await self._step(step.id, PlanStepStatus.OK, detail=detail)
        return True

    def _summary(self, completion: PlanStep) -> str:
        """What the completion is told: the plan's outcome, step by step."""
        lines = []
        for step in self.plan["steps"]:
            if step["id"] == completion.id:
                continue
            why = step.get("error") or step.get("detail") or ""
            lines.append(f"- {step['id']} ({step['label']}): {step['status']} {why}".rstrip())
        done = "\n".join(lines) or "- (no steps before the answer)"
        task = completion.description or completion.label
        return f"The plan has run:\n{done}\nNow answer the user ({task}). Do not call tools."

    # -- the plan cell -----------------------------------------------------------------
    async def _step(self, step_id: str, status: PlanStepStatus, **fields: Any) -> None:
        await self._show(cells.step_changed(self.plan, step_id, status, **fields))

    async def _show(self, plan: dict[str, Any], *, create: bool = False) -> None:
        """Store the plan's new state: a new `seq`, announced after commit."""
        self.plan = plan
        run = self.state.run

        async def work(session: AsyncSession) -> None:
            if create or self.message is None:
                self.message = await create_message(
                    session, run.thread_id, role="assistant", content=None, run_id=run.id, plan=plan
                )
                return
            await update_message(session, self.message, plan=plan)

        await self.deps.write(work)
