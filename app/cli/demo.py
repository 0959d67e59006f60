"""Demo data: a user, agents and threads with finished tool cells. Safe to run twice."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from functools import partial
from typing import Any, NamedTuple

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from uuid_utils.compat import uuid7

from app.accounts.services import create_user, get_user_by_email
from app.db.models import Agent, ApiToken, Memory, Run, RunStatus, Task, Thread, User
from app.lib.security import token_digest
from app.lib.time import utcnow
from app.threads import activity as cell
from app.threads.writer import create_message
from app.tools.base import ToolData, ToolResult
from app.tools.builtin.memory import memory_result
from app.tools.builtin.tasks import task_data

DEMO_EMAIL = "demo@example.com"
DEMO_PASSWORD = "demo-password"
# A fixed token so the README's curl examples work after `litestar seed demo`.
DEMO_TOKEN = "tc_demo_token_for_local_use_only"
DEMO_MODEL = "demo/tool-demo"


async def _demo_user(session: AsyncSession) -> User:
    return await get_user_by_email(session, DEMO_EMAIL) or await create_user(
        session, DEMO_EMAIL, DEMO_PASSWORD
    )


async def _demo_token(session: AsyncSession, user: User) -> None:
    digest = token_digest(DEMO_TOKEN)
    token = await session.scalar(select(ApiToken).where(ApiToken.token_hash == digest))
    if token is None:
        session.add(ApiToken(user_id=user.id, token_hash=digest, expires_at=utcnow()))
        await session.flush()
        token = await session.scalar(select(ApiToken).where(ApiToken.token_hash == digest))
    assert token is not None
    token.revoked_at = None
    token.expires_at = utcnow() + timedelta(days=365)


async def _agent(
    session: AsyncSession, user: User, name: str, agent_type: str, prompt: str
) -> Agent:
    agent = await session.scalar(select(Agent).where(Agent.owner_id == user.id, Agent.name == name))
    if agent is None:
        agent = Agent(
            owner_id=user.id,
            name=name,
            agent_type=agent_type,
            model=DEMO_MODEL,
            system_prompt=prompt,
        )
        session.add(agent)
        await session.flush()
    return agent


def _activity(call_id: str, name: str, input_: dict, data: ToolData, display: str) -> dict:
    """A cell that ran and succeeded just now, its data built as the tool builds it."""
    now = utcnow()
    outcome = ToolResult.success(data, display_message=display)
    return cell.finished(cell.started(call_id, name, input_, now=now), outcome, now=now)


async def _finished_turn(
    session: AsyncSession, thread: Thread, user_text: str, tool: dict, answer: str
) -> None:
    run_id = uuid7()
    user_message = await create_message(
        session, thread.id, role="user", content=user_text, run_id=run_id
    )
    now = utcnow()
    session.add(
        Run(
            id=run_id,
            thread_id=thread.id,
            agent_id=thread.agent_id,
            trigger_message_id=user_message.id,
            status=RunStatus.COMPLETED.value,
            started_at=now,
            finished_at=now,
        )
    )
    call = {
        "id": tool["id"],
        "type": "function",
        "function": {"name": tool["name"], "arguments": "{}"},
    }
    await create_message(
        session, thread.id, role="assistant", run_id=run_id, tool_calls=[call], is_user_facing=False
    )
    await create_message(
        session, thread.id, role="tool", run_id=run_id, tool_call_id=tool["id"], tool_activity=tool
    )
    await create_message(session, thread.id, role="assistant", content=answer, run_id=run_id)


async def _thread(session: AsyncSession, user: User, agent: Agent, title: str) -> Thread | None:
    """A new demo thread, or None when it exists already."""
    exists = await session.scalar(
        select(Thread.id).where(Thread.owner_id == user.id, Thread.title == title)
    )
    if exists:
        return None
    thread = Thread(owner_id=user.id, agent_id=agent.id, title=title, last_activity_at=utcnow())
    session.add(thread)
    await session.flush()
    return thread


class DemoCall(NamedTuple):
    """A tool call of the demo's history: its row's data as the tool builds it."""

    tool: str
    args: dict[str, Any]
    data_of: Callable[[Any], ToolData]
    display: str


async def _tool_turn(
    session: AsyncSession, thread: Thread, row: Any, call: DemoCall, talk: tuple[str, str]
) -> None:
    """`row` stored by `call`, shown as a finished turn: `talk` is (asked, answered)."""
    session.add(row)
    await session.flush()
    tool = _activity(
        f"call_demo_{call.tool}", call.tool, call.args, call.data_of(row), call.display
    )
    asked, answered = talk
    await _finished_turn(session, thread, asked, tool, answered)


async def seed_demo(session: AsyncSession) -> str:
    user = await _demo_user(session)
    await _demo_token(session, user)
    assistant = await _agent(
        session, user, "Assistant", "assistant", "You are a helpful assistant."
    )
    await _agent(session, user, "Researcher", "specialist", "You research questions on the web.")
    await _agent(session, user, "Planner", "planner", "You plan the steps, then answer.")
    await _agent(session, user, "Companion", "companion", "You help with the day, wherever.")
    groceries = await _thread(session, user, assistant, "Groceries")
    if groceries is not None:
        task = Task(
            owner_id=user.id, title="Buy milk", agent_id=assistant.id, thread_id=groceries.id
        )
        args = {"action": "create", "title": "Buy milk"}
        call = DemoCall("tasks", args, task_data, "Created “Buy milk”")
        talk = ("Remind me to buy milk", "Done — “Buy milk” is on your task list.")
        await _tool_turn(session, groceries, task, call, talk)
    remember = await _thread(session, user, assistant, "About me")
    if remember is not None:
        memory = Memory(owner_id=user.id, agent_id=assistant.id, content="Prefers oat milk")
        args = {"action": "save", "content": "Prefers oat milk"}
        saved = partial(memory_result, "save", created=True)
        call = DemoCall("memory", args, saved, "Saved to memory")
        talk = ("I prefer oat milk, remember that.", "Got it, I'll remember you prefer oat milk.")
        await _tool_turn(session, remember, memory, call, talk)
    return DEMO_TOKEN
