"""The message-page read path, kept lean because the app polls it.

Rows are selected as plain columns (no ORM identity map or change tracking), and a tool
activity goes from the database's JSON text straight to its Struct in one msgspec decode
instead of json.loads plus a conversion. The result equals `serializers.message_read`.
"""

from __future__ import annotations

from typing import Any

import msgspec
from sqlalchemy import Select, Text, cast, select

from app.db.models import ThreadMessage
from app.threads.schemas import ThreadMessageRead, ToolActivity

_activity = msgspec.json.Decoder(ToolActivity)
# SQL NULL, a JSON null and an empty object all mean "no tool activity".
_NO_ACTIVITY = {None, "null", "{}"}

COLUMNS = (
    ThreadMessage.id,
    ThreadMessage.thread_id,
    ThreadMessage.run_id,
    ThreadMessage.position,
    ThreadMessage.seq,
    ThreadMessage.role,
    ThreadMessage.content,
    ThreadMessage.is_user_facing,
    ThreadMessage.client_message_id,
    cast(ThreadMessage.tool_activity, Text).label("tool_activity"),
    ThreadMessage.created_at,
    ThreadMessage.updated_at,
)


def select_message_rows() -> Select[Any]:
    return select(*COLUMNS)


def row_to_read(row: Any) -> ThreadMessageRead:
    activity = row.tool_activity
    return ThreadMessageRead(
        id=row.id,
        thread_id=row.thread_id,
        run_id=row.run_id,
        position=row.position,
        seq=row.seq,
        role=row.role,
        content=row.content,
        is_user_facing=row.is_user_facing,
        client_message_id=row.client_message_id,
        tool_activity=None if activity in _NO_ACTIVITY else _activity.decode(activity),
        created_at=row.created_at,
        updated_at=row.updated_at,
    )
