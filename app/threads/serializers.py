"""ORM rows to response Structs."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import msgspec

from app.attachments.schemas import AttachmentRead
from app.db.models import Run, Thread, ThreadMessage
from app.threads.plan import Plan
from app.threads.records import StoredMessage, StoredRun
from app.threads.schemas import (
    MessageSiblings,
    RunDetail,
    RunRead,
    RunTrace,
    ThreadMessageRead,
    ThreadRead,
    ToolActivity,
)


def message_read_of(
    row: Any,
    tool_activity: ToolActivity | None,
    plan: Plan | None = None,
    attachments: list[AttachmentRead] | None = None,
) -> ThreadMessageRead:
    """The one message -> ThreadMessageRead conversion, for an ORM ThreadMessage or a plain
    row of the same columns; its cell comes already decoded (from the ORM's dict, or
    straight from the JSON text on the page path: app/threads/message_reads.py)."""
    return ThreadMessageRead(
        id=row.id,
        thread_id=row.thread_id,
        run_id=row.run_id,
        position=row.position,
        parent_id=row.parent_id,
        siblings=siblings_of(row.id, row.sibling_ids),
        seq=row.seq,
        role=row.role,
        content=row.content,
        is_user_facing=row.is_user_facing,
        client_message_id=row.client_message_id,
        tool_activity=tool_activity,
        plan=plan,
        attachments=attachments or [],
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def siblings_of(message_id: UUID, sibling_ids: list[Any] | None) -> MessageSiblings:
    """The versions stored on a message (`sibling_ids`: None when it is the only one)."""
    if not sibling_ids:
        return MessageSiblings(count=1, index=0, ids=[message_id])
    ids = [value if isinstance(value, UUID) else UUID(value) for value in sibling_ids]
    index = ids.index(message_id) if message_id in ids else 0
    return MessageSiblings(count=len(ids), index=index, ids=ids)


def message_read(message: ThreadMessage | StoredMessage) -> ThreadMessageRead:
    activity, plan, attachments = message.tool_activity, message.plan, message.attachments
    return message_read_of(
        message,
        msgspec.convert(activity, ToolActivity) if activity else None,
        msgspec.convert(plan, Plan) if plan else None,
        msgspec.convert(attachments, list[AttachmentRead]) if attachments else None,
    )


def run_read(run: Run | StoredRun) -> RunRead:
    return msgspec.convert(run, RunRead, from_attributes=True)  # same names, same shapes


def run_detail(run: Run, trace: RunTrace) -> RunDetail:
    fields = msgspec.structs.asdict(run_read(run))
    return RunDetail(**fields, steps=trace.steps, tool_results=trace.tool_results)


def thread_read(thread: Thread, active_run_id: UUID | None) -> ThreadRead:
    return ThreadRead(
        id=thread.id,
        title=thread.title,
        agent_id=thread.agent_id,
        last_seq=thread.last_seq,
        active_run_id=active_run_id,
        current_leaf_id=thread.current_leaf_id,
        created_at=thread.created_at,
        updated_at=thread.last_activity_at,
    )
