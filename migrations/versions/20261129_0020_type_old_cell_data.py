"""type_old_cell_data: every stored cell `data` gets the `type` the union `ToolData` needs

Cells written before their data was typed (before the `ToolData` union, 2026-11-26) may
hold a `data` object without `type`, which generated clients cannot decode (the union
chooses its member by `type`). The tools' own results always carried one; what did not
is told from the cell, as app/threads/activity.py decides it today:

- an open cell (preparing, in_progress, awaiting_*): its progress: `progress`;
- a failed cell: the progress or streamed output it kept: `error`, with the cell's own
  `error` and `error_type` (every key kept: ToolError allows more);
- a successful `ask_*` call with its `answer` and `agent_name`: `delegation_result`;
- a successful call of any other tool that is neither builtin nor MCP (their results were
  always typed): a device tool, whose output was stored as the phone sent it:
  `device_result`, `{tool, result}`;
- anything else (a builtin's or an MCP tool's result without `type`, data that is not an
  object, a status this code does not know): `untyped`, the union's fallback member
  `UnknownData` (a `type` no known member has, every key kept; data that is not an
  object is kept under `value`). Apps show such a cell from its generic fields.

Rows are read in chunks (by id, only those whose data lacks a string `type`), so a large
table is never loaded whole. The rules are frozen here (a migration must not change with
the code); tests/test_migration_cell_types.py checks them against the code of today.

Downgrade is a no-op: the added `type` is what current code writes anyway, and code of
the revision before reads data as a free JSON object, so typed data suits it too.

Revision ID: 0020_type_old_cell_data
Revises: 0019_memory_vector_versions
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import advanced_alchemy.types
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0020_type_old_cell_data"
down_revision: str | None = "0019_memory_vector_versions"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CHUNK = 500
OPEN_STATUSES = frozenset(
    {"preparing", "in_progress", "awaiting_approval", "awaiting_device", "awaiting_input"}
)
BUILTIN_TOOLS = frozenset({"tasks", "web", "memory", "self_authoring", "schedules"})
SPECIALIST_PREFIX = "ask_"
MCP_SEPARATOR = "__"  # an MCP tool is `<server>__<tool>`
UNTYPED = "untyped"

_messages = sa.table(
    "thread_messages",
    sa.column("id", advanced_alchemy.types.GUID(length=16)),
    sa.column("tool_activity", sa.JSON().with_variant(postgresql.JSONB(), "postgresql")),
)
# Rows whose cell has data without a string `type` (a JSON object or any other value).
_UNTYPED_SQLITE = sa.text(
    "json_type(tool_activity, '$.data') NOT IN ('null') "
    "AND coalesce(json_type(tool_activity, '$.data.type'), '') <> 'text'"
)
_UNTYPED_POSTGRESQL = sa.text(
    "jsonb_typeof(tool_activity -> 'data') <> 'null' "
    "AND coalesce(jsonb_typeof(tool_activity -> 'data' -> 'type'), '') <> 'string'"
)


def _error(cell: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    error = cell.get("error") if isinstance(cell.get("error"), str) else None
    kind = cell.get("error_type") if isinstance(cell.get("error_type"), str) else None
    typed = {"type": "error", "error": error or "The call failed."}
    return {**data, **typed, "error_type": kind or "system_error"}


def _success(name: str, data: dict[str, Any]) -> dict[str, Any]:
    specialist = name.startswith(SPECIALIST_PREFIX)
    if specialist and isinstance(data.get("answer"), str):
        if isinstance(data.get("agent_name"), str):
            return {**data, "type": "delegation_result"}
    elif not specialist and name not in BUILTIN_TOOLS and MCP_SEPARATOR not in name and name:
        return {"type": "device_result", "tool": name, "result": data}
    return {**data, "type": UNTYPED}


def typed_data(cell: dict[str, Any]) -> Any:
    """The cell's data with its `type` (see the module's docstring)."""
    data, status = cell.get("data"), cell.get("status")
    if not isinstance(data, dict):
        return {"type": UNTYPED, "value": data}
    if status in OPEN_STATUSES:
        return {**data, "type": "progress"}
    if status == "failure":
        return _error(cell, data)
    if status == "success":
        return _success(str(cell.get("name") or ""), data)
    return {**data, "type": UNTYPED}


def _chunk(connection: sa.Connection, after: Any) -> list[sa.Row[Any]]:
    untyped = _UNTYPED_POSTGRESQL if connection.dialect.name == "postgresql" else _UNTYPED_SQLITE
    query = (
        sa.select(_messages.c.id, _messages.c.tool_activity)
        .where(_messages.c.tool_activity.is_not(None), untyped)
        .order_by(_messages.c.id)
        .limit(CHUNK)
    )
    if after is not None:
        query = query.where(_messages.c.id > after)
    return list(connection.execute(query))


def upgrade() -> None:
    connection = op.get_bind()
    after = None
    while rows := _chunk(connection, after):
        for message_id, cell in rows:
            typed = {**cell, "data": typed_data(cell)}
            connection.execute(
                sa.update(_messages).where(_messages.c.id == message_id).values(tool_activity=typed)
            )
        after = rows[-1][0]


def downgrade() -> None:
    pass  # the `type` stays: see the module's docstring
