"""A thread's messages rebuilt as the model's conversation (OpenAI chat format).

Rows map one to one: user -> user; assistant -> assistant (with its `tool_calls`);
tool -> tool (`tool_call_id`, `content` = exactly what the model read). Messages are
grouped by run in the order runs were triggered, so a message posted while a run was
working (double texting) follows that run's tool results instead of splitting them.
The result is made valid for strict providers: every tool call gets an answer, and tool
messages that answer no call of the conversation (a specialist's, interrupted ones) are
left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol
from uuid import UUID

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import direct
from app.db.models import ThreadMessage
from app.orchestrator.door.llm import ModelTurn, cut_text
from app.orchestrator.loop.attachment_parts import (
    MAX_REPLAYED_IMAGES,
    document_texts,
    replayed_images,
    tool_images,
    tool_images_message,
    user_content,
)
from app.threads import repository
from app.threads.activity import INTERRUPTED, failure_content
from app.tools.bounds import DEFAULT_MAX_BYTES

# What the model reads of one stored tool result at the most (the context fitter cuts
# further when the window needs it); results are bounded when made (app/tools/bounds.py).
STORED_RESULT_MAX_CHARS = 4 * DEFAULT_MAX_BYTES
DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant. Use the tools when they help."
HISTORY_LIMIT = 400  # rows read; the context window trims further
_messages = ThreadMessage.__table__


class HistoryRow(Protocol):
    """What the conversation is rebuilt from: a message row (or a ThreadMessage)."""

    id: UUID
    role: str
    content: str | None
    tool_calls: list[dict[str, Any]] | None
    tool_call_id: str | None
    tool_activity: dict[str, Any] | None
    run_id: UUID | None
    position: int
    attachments: list[dict[str, Any]] | None


# Built once (every run reads it); the columns it needs as plain rows, on the table
# (Core): loading a long thread's messages as ORM instances cost ~5x as much. The model
# reads the thread's current branch only (the other versions are the user's, not its).
_branch = repository.branch(repository.current_leaf(bindparam("thread_id")))
_LATEST = (
    select(*(_messages.c[name] for name in HistoryRow.__annotations__))
    .join(_branch, _branch.c.id == _messages.c.id)
    .order_by(_messages.c.position.desc())
    .limit(HISTORY_LIMIT)
)
_BRANCH_PARAMS = {"bound": repository.NO_BOUND, "limit": HISTORY_LIMIT}


def _ordered(rows: Sequence[HistoryRow], until_run: UUID | None = None) -> list[HistoryRow]:
    """Rows grouped by run in trigger order; with `until_run`, nothing of later runs
    (a message queued behind this run is not part of its conversation)."""
    trigger_position: dict[UUID, int] = {
        row.run_id: row.position for row in rows if row.role == "user" and row.run_id
    }

    def key(row: HistoryRow) -> tuple[int, int, int]:
        anchor = trigger_position.get(row.run_id, row.position) if row.run_id else row.position
        return anchor, 0 if row.role == "user" else 1, row.position

    ordered = sorted(rows, key=key)
    if until_run is not None and until_run in trigger_position:
        limit = trigger_position[until_run]
        ordered = [row for row in ordered if key(row)[0] <= limit]
    return ordered


def _tool_content(row: HistoryRow) -> str:
    if row.content:  # a result stored before results were bounded may be huge: cut here
        return cut_text(row.content, STORED_RESULT_MAX_CHARS)
    activity = row.tool_activity or {}
    return failure_content(
        activity.get("error") or INTERRUPTED, activity.get("error_type") or "system_error"
    )


def to_model_messages(
    rows: Sequence[HistoryRow],
    until_run: UUID | None = None,
    texts: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """`texts`: the documents' text by attachment id (`document_texts`)."""
    out: list[dict[str, Any]] = []
    replay = replayed_images(sorted(rows, key=lambda row: row.position))
    pending: dict[str, dict[str, Any] | None] = {}  # call id -> its answer, in call order
    returned: list[tuple[str, dict[str, Any]]] = []  # (tool, image) of the pending answers

    def flush_pending() -> None:
        for call_id, answer in pending.items():
            out.append(
                answer
                or {
                    "role": "tool",
                    "tool_call_id": call_id,
                    "content": failure_content(INTERRUPTED, "system_error"),
                }
            )
        if pending and (images := tool_images_message(returned, replay)):
            out.append(images)
        pending.clear()
        returned.clear()

    for row in _ordered(rows, until_run):
        if row.role == "tool":
            if row.tool_call_id in pending and pending[row.tool_call_id] is None:
                pending[row.tool_call_id] = {
                    "role": "tool",
                    "tool_call_id": row.tool_call_id,
                    "content": _tool_content(row),
                }
                name = (row.tool_activity or {}).get("name") or "a tool"
                returned.extend((name, image) for image in tool_images(row.tool_activity))
            continue
        flush_pending()
        if row.role == "user":
            content = user_content(row.content or "", row.attachments, texts or {}, replay)
            out.append({"role": "user", "content": content})
        elif row.role == "assistant":
            message: dict[str, Any] = {"role": "assistant", "content": row.content or None}
            if row.tool_calls:
                message["tool_calls"] = row.tool_calls
                pending.update({call["id"]: None for call in row.tool_calls})
            if message["content"] is None and not row.tool_calls:
                continue  # an empty row (interrupted before any text)
            out.append(message)
    flush_pending()
    return out


def answered_turn(turn: ModelTurn, outcomes: Sequence[Any]) -> list[dict[str, Any]]:
    """A model turn's calls and their results (`CallOutcome`s) as the next turn reads
    them; the images the calls returned follow them (tool_images_message)."""
    answers = [{"role": "tool", "tool_call_id": done.call.id, "content": done.content}
               for done in outcomes]  # fmt: skip
    returned = [
        (done.message.tool_activity.get("name") or "a tool", image)
        for done in outcomes
        if done.message.tool_activity
        for image in tool_images(done.message.tool_activity)
    ][-MAX_REPLAYED_IMAGES:]
    images = tool_images_message(returned, {str(image["id"]) for _, image in returned})
    call = {"role": "assistant", "content": turn.text or None, "tool_calls": turn.tool_calls}
    return [call, *answers, *([images] if images else [])]


async def load_history(
    session: AsyncSession, thread_id: UUID, system_prompt: str | None, run_id: UUID | None = None
) -> list[dict[str, Any]]:
    params = {"thread_id": thread_id, **_BRANCH_PARAMS}
    rows: Sequence[Any] = (await direct.execute(session, _LATEST, params)).rows
    messages = to_model_messages(rows, run_id, await document_texts(session, rows))
    while messages and messages[0]["role"] == "tool":
        messages.pop(0)  # the read window cut a turn in half
    return [{"role": "system", "content": system_prompt or DEFAULT_SYSTEM_PROMPT}, *messages]
