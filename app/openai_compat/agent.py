"""`POST /v1/agent`: a prompt in, the agent's plan and answer out (seed 001).

One turn of the agent in a new thread, run as `/v1/chat/completions` runs it (stored and
committed first, then awaited with `COMPLETION_WAIT_SECONDS`): the planner makes a plan
when the agent's type has one. The answer is the finished run: its text, its plan and its
steps, each tool cell as the app renders it, then the `completion` step. A run that failed
or was cancelled is still a 200 whose `status` and `error` say so (its steps show how far it
got); a wait that ends first is a 504 problem naming the thread and run (the run goes on).
Errors are problem details (this is not an OpenAI endpoint).
"""

from __future__ import annotations

import msgspec
from litestar import post
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from app.accounts.deps import SignedInController
from app.agents.services import list_agents
from app.db.models import Agent, Run, RunStatus, ThreadMessage, User
from app.lib.problems import ProblemException, problems
from app.openai_compat.completions import commit_started, start_turn
from app.openai_compat.errors import timeout_error
from app.openai_compat.models import resolve_model
from app.openai_compat.schemas import AgentRun, AgentRunRequest, AgentRunStep
from app.openai_compat.trace import answer_text, run_messages
from app.openai_compat.watch import RunWatch, WaitTimeout, sessions_for
from app.realtime.channels import RealtimeChannels
from app.settings import Settings
from app.threads.plan import Plan
from app.usage.budget import refuse_if_spent

MEMORY_TOOL = "memory"


def _bad_prompt() -> ProblemException:
    message = "prompt has no text."
    return ProblemException(400, message, errors=[{"field": "prompt", "message": message}])


async def _agent_for(session: AsyncSession, user: User, agent: str | None) -> Agent:
    if agent is not None:
        return await resolve_model(session, user, agent, field="agent")
    own = [a for a in await list_agents(session, user) if a.owner_id == user.id]
    if not own:
        raise ProblemException(404, "You have no agent: create one (POST /api/agents).")
    return own[0]


def _tool_step(row: ThreadMessage) -> AgentRunStep:
    cell = row.tool_activity or {}
    name = cell.get("name") or ""
    return AgentRunStep(
        type="memory" if name == MEMORY_TOOL else "tool",
        name=name,
        status=cell.get("status") or "failure",
        display_message=cell.get("display_message"),
        data=cell.get("data"),
        error=cell.get("error"),
        step_id=cell.get("step_id"),
    )


def agent_run(run: Run, rows: list[ThreadMessage], metadata: dict | None) -> AgentRun:
    """The finished run as `POST /v1/agent` answers it."""
    answer = answer_text(rows) or None
    done = run.status == RunStatus.COMPLETED.value
    error = None if done else run.error or "Cancelled."
    completion = AgentRunStep(
        type="completion",
        name="completion",
        status="success" if done else "failure",
        error=error,
        content=answer,
    )
    tools = [_tool_step(row) for row in rows if row.role == "tool" and row.tool_activity]
    plan = next((row.plan for row in rows if row.plan), None)
    return AgentRun(
        id=f"agentrun-{run.id.hex}",
        thread_id=run.thread_id,
        run_id=run.id,
        status=run.status,  # type: ignore[arg-type]
        answer=answer,
        error=error,
        plan=msgspec.convert(plan, Plan) if plan is not None else None,
        steps=[*tools, completion],
        metadata=metadata,
    )


class AgentRunController(SignedInController):
    path = "/v1"
    tags = ["agent"]

    @post("/agent", operation_id="RunAgent", status_code=200, responses=problems(404, 429, 504))
    async def run_agent(
        self,
        data: AgentRunRequest,
        db_session: AsyncSession,
        db_engine: AsyncEngine,
        current_user: User,
        channels: RealtimeChannels,
        settings: Settings,
    ) -> AgentRun:
        """Run one turn of your agent (`agent`: its id or name; default your first agent)
        on `prompt` in a new thread, and answer its plan, steps and answer once the run
        has ended. Waits at most `COMPLETION_WAIT_SECONDS`: then a 504 whose `thread_id`
        and `run_id` say where the answer will be."""
        if not data.prompt.strip():
            raise _bad_prompt()
        agent = await _agent_for(db_session, current_user, data.agent)
        await refuse_if_spent(db_session, current_user.id, settings)
        started = await start_turn(db_session, current_user, agent, data.prompt)
        await commit_started(db_session)
        watch = RunWatch(channels, sessions_for(db_engine), started.run.id, started.thread.id)
        wait = settings.completion_wait_seconds
        async with watch:
            try:
                run = await watch.finished(wait)
            except WaitTimeout:
                raise timeout_error(started.run, wait) from None
        async with watch.sessions() as session:
            rows = await run_messages(session, run.id)
        return agent_run(run, rows, data.metadata)
