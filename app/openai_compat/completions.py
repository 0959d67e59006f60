"""Starting a chat completion: the agent, the thread, the user message and its run.

How `messages` are read: the last `user` message is the new message of the run (its text
parts joined). With `metadata.thread_id` the thread's stored history is the context and
the other request messages are ignored (the thread already has them). Without it a new
thread is created and the earlier `user` and `assistant` texts are stored in it first, in
order, so the model sees the conversation a stateless client sends each time. `system`
and `developer` messages are ignored (the agent's own prompt rules), and so are tool
messages and tool calls (the agent's tools are the server's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Agent, Run, Thread, User
from app.db.session import CommitFailedError
from app.lib.problems import ProblemException
from app.openai_compat.models import resolve_model
from app.openai_compat.schemas import ChatCompletionRequest, ChatMessageIn, CompletionOptions
from app.threads.messages import post_user_message
from app.threads.schemas import MessageCreate
from app.threads.services import create_thread, get_owned_thread
from app.threads.writer import create_messages

TITLE_LENGTH = 80


@dataclass(frozen=True)
class StartedCompletion:
    agent: Agent
    thread: Thread
    run: Run


def message_text(message: ChatMessageIn) -> str:
    """A message's text: its content string, or its text parts joined (others ignored)."""
    if isinstance(message.content, str):
        return message.content
    parts = message.content if isinstance(message.content, list) else []
    texts = [p.get("text") for p in parts if isinstance(p, dict) and p.get("type") == "text"]
    return "\n".join(t for t in texts if isinstance(t, str))


def _bad_request(message: str, param: str) -> ProblemException:
    return ProblemException(400, message, errors=[{"field": param, "message": message}])


def _split(messages: list[ChatMessageIn]) -> tuple[list[ChatMessageIn], str]:
    """(the messages before the last user message, the last user message's text)."""
    last = max((i for i, m in enumerate(messages) if m.role == "user"), default=None)
    if last is None:
        raise _bad_request("messages must contain a user message.", "messages")
    text = message_text(messages[last])
    if not text.strip():
        raise _bad_request("The last user message has no text.", f"messages[{last}].content")
    return messages[:last], text


def _json_option(value: Any, name: str) -> Any:
    """`tools` and `tool_calls` as the body of POST …/messages takes them: a list. Text is
    JSON, or (not starting with `[` or `{`) comma-separated names; one name or one call
    (`"tasks"`, `{"name": …}`) is a list of one."""
    if isinstance(value, str):
        if not value.lstrip().startswith(("[", "{", '"')):
            return [item.strip() for item in value.split(",") if item.strip()]
        try:
            value = msgspec.json.decode(value)
        except msgspec.DecodeError:
            raise _bad_request(f"metadata.{name} is not valid JSON.", f"metadata.{name}") from None
    if isinstance(value, str) or (name == "tool_calls" and isinstance(value, dict)):
        return [value]
    return value


def new_message(text: str, options: CompletionOptions | None) -> MessageCreate:
    """The run's user message, validated as `POST …/messages` validates its body."""
    body: dict[str, Any] = {"content": text}
    if options is not None:
        for name in ("tools", "tool_calls"):
            value = _json_option(getattr(options, name), name)
            if value is not None:
                body[name] = value
    try:
        return msgspec.convert(body, MessageCreate)
    except msgspec.ValidationError as exc:
        field = str(exc).rpartition("`$.")[2].rstrip("`") or "messages"
        param = field if field in ("tools", "tool_calls") or field.startswith("tool") else None
        param = f"metadata.{param}" if param else "messages"
        raise _bad_request(f"Invalid request: {exc}", param) from None


async def _thread_for(
    session: AsyncSession, user: User, agent: Agent, options: CompletionOptions | None
) -> Thread | None:
    if options is None or options.thread_id is None:
        return None
    thread = await get_owned_thread(session, user, options.thread_id)
    if thread.agent_id != agent.id:
        raise _bad_request(
            f"Thread {thread.id} belongs to another agent: call it with model "
            f"{thread.agent_id}, or leave metadata.thread_id out for a new thread.",
            "model",
        )
    return thread


async def _new_thread(
    session: AsyncSession, user: User, agent: Agent, earlier: list[ChatMessageIn], text: str
) -> Thread:
    thread = await create_thread(session, user, agent.id, text.strip()[:TITLE_LENGTH])
    rows = [
        {"role": m.role, "content": content}
        for m in earlier
        if m.role in ("user", "assistant") and (content := message_text(m).strip())
    ]
    for row in rows:
        if len(row["content"]) > 32_000:
            raise _bad_request("A message is longer than 32000 characters.", "messages")
    await create_messages(session, thread.id, rows)
    return thread


async def start_completion(
    session: AsyncSession, user: User, data: ChatCompletionRequest
) -> StartedCompletion:
    """Store the user message and queue its run (in `session`, not committed here)."""
    agent = await resolve_model(session, user, data.model)
    earlier, text = _split(data.messages)
    message = new_message(text, data.metadata)
    thread = await _thread_for(session, user, agent, data.metadata)
    if thread is None:
        thread = await _new_thread(session, user, agent, earlier, text)
    _, run, _ = await post_user_message(session, thread, message)
    return StartedCompletion(agent=agent, thread=thread, run=run)


async def start_turn(
    session: AsyncSession, user: User, agent: Agent, text: str
) -> StartedCompletion:
    """One turn of `agent` on `text` in a new thread (`POST /v1/agent`): as a completion
    without history, in `session` (not committed here)."""
    thread = await _new_thread(session, user, agent, [], text)
    _, run, _ = await post_user_message(session, thread, new_message(text, None))
    return StartedCompletion(agent=agent, thread=thread, run=run)


async def commit_started(session: AsyncSession) -> None:
    """Commit the run now (not after the handler): it must run while we wait for it."""
    try:
        await session.commit()
    except Exception as exc:
        await session.rollback()
        raise CommitFailedError("the completion's run could not be stored") from exc
