"""ORM rows to response Structs."""

from __future__ import annotations

from uuid import UUID

import msgspec

from app.db.models import Run, Thread, ThreadMessage
from app.threads.schemas import RunRead, ThreadMessageRead, ThreadRead, ToolActivity


def message_read(message: ThreadMessage) -> ThreadMessageRead:
    activity = message.tool_activity
    return ThreadMessageRead(
        id=message.id,
        thread_id=message.thread_id,
        run_id=message.run_id,
        position=message.position,
        seq=message.seq,
        role=message.role,  # type: ignore[arg-type]
        content=message.content,
        is_user_facing=message.is_user_facing,
        client_message_id=message.client_message_id,
        tool_activity=msgspec.convert(activity, ToolActivity) if activity else None,
        created_at=message.created_at,
        updated_at=message.updated_at,
    )


def run_read(run: Run) -> RunRead:
    return RunRead(
        id=run.id,
        thread_id=run.thread_id,
        status=run.status,  # type: ignore[arg-type]
        error=run.error,
        trigger_message_id=run.trigger_message_id,
        created_at=run.created_at,
        started_at=run.started_at,
        finished_at=run.finished_at,
    )


def thread_read(thread: Thread, active_run_id: UUID | None) -> ThreadRead:
    return ThreadRead(
        id=thread.id,
        title=thread.title,
        agent_id=thread.agent_id,
        last_seq=thread.last_seq,
        active_run_id=active_run_id,
        created_at=thread.created_at,
        updated_at=thread.last_activity_at,
    )
