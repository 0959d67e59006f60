"""0020_type_old_cell_data on a populated database: cells stored before their data was
typed get the `type` the union `ToolData` chooses by, on both dialects; a client
generated from openapi/openapi.json then decodes the page, and the server's own types
decode every row. The migration's frozen rules agree with the code of today."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Iterator
from datetime import UTC, datetime
from types import ModuleType
from typing import Any
from uuid import UUID

import msgspec
import pytest
from litestar.testing import TestClient
from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool
from uuid_utils.compat import uuid7

from app import create_app
from app.agents.delegates import PREFIX
from app.db.models import Agent, Thread, ThreadMessage, User
from app.lib.security import new_token
from app.settings import PROJECT_ROOT, Settings
from app.threads import activity
from app.threads.schemas import ToolActivity
from app.tools import assembly
from app.tools.mcp.naming import SEPARATOR
from tests.support.databases import alembic
from tests.support.generated_client import generated, module_of  # noqa: F401
from tests.support.sync_db import seed_user

BEFORE, REVISION = "0019_memory_vector_versions", "0020_type_old_cell_data"
EMAIL, PASSWORD, TOKEN = "cells@example.com", "cells-password", new_token()
STARTED = "2026-11-24T10:00:00+00:00"


def _migration() -> ModuleType:
    [path] = (PROJECT_ROOT / "migrations" / "versions").glob(f"*_{REVISION.split('_', 1)[0]}_*")
    spec = importlib.util.spec_from_file_location("cell_types_migration", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cell(name: str, status: str, data: Any, **fields: Any) -> dict[str, Any]:
    """A cell as code before 2026-11-26 stored it."""
    ended = None if status in activity.OPEN_STATUSES else STARTED
    return {
        "id": f"call_{uuid7().hex[:8]}", "name": name, "status": status,
        "input": {"action": "search", "query": "otters"}, "data": data,
        "display_message": None, "error": None, "error_type": None, "started_at": STARTED,
        "finished_at": ended, "expires_at": None, "preview": None, **fields,
    }  # fmt: skip


TASK = {
    "type": "task", "task_id": "0b6a5c1e-4d3f-4e2a-9c8b-7a6f5e4d3c2b", "task_title": "Milk",
    "task_status": "active", "notes": None, "due_at": None,
}  # fmt: skip
# (the cell as stored, the `type` it has after the migration; None: data left as it was)
OLD_CELLS: list[tuple[dict[str, Any], str | None]] = [
    (_cell("web", "in_progress", {"url": "https://a.example", "bytes_received": 10}), "progress"),
    (_cell("web", "failure", {"output": "Otters are", "truncated": True},
           error="The page did not load.", error_type="system_error"), "error"),
    (_cell("memory", "failure", {"progress": 0.5, "total": None},
           error="You declined.", error_type="permission_error"), "error"),
    (_cell("ask_sage", "success", {"answer": "Otters hold hands.", "agent_name": "Sage"}),
     "delegation_result"),
    (_cell("get_location", "success", {"latitude": 48.1, "longitude": 11.5}), "device_result"),
    (_cell("tasks", "success", {"task_id": "x"}), "untyped"),  # a builtin's: always typed
    (_cell("ask_sage", "success", {"answer": "no agent name"}), "untyped"),
    (_cell("get_location", "success", ["not", "an", "object"]), "untyped"),
    (_cell("tasks", "success", TASK), None),  # typed already: untouched
    (_cell("tasks", "awaiting_approval", None), None),  # no data: untouched
]  # fmt: skip
BULK = 1100  # more rows than two of the migration's chunks


def _populate(url: str) -> tuple[UUID, UUID]:
    """The seeded user's thread of OLD_CELLS, and a thread of BULK old running cells."""

    async def write() -> tuple[UUID, UUID]:
        engine = create_async_engine(url, poolclass=NullPool)
        async with engine.begin() as connection:
            users, agents = User.__table__, Agent.__table__
            user_id = (await connection.execute(select(users.c.id))).scalar_one()
            agent_id = (await connection.execute(select(agents.c.id))).scalar_one()
            shapes, bulk = uuid7(), uuid7()
            bulk_cell = _cell("web", "in_progress", {"bytes_received": 1})
            for thread_id, cells in (
                (shapes, [cell for cell, _ in OLD_CELLS]),
                (bulk, [bulk_cell] * BULK),
            ):
                thread = {"id": thread_id, "owner_id": user_id, "agent_id": agent_id}
                counts = {"last_seq": len(cells), "message_count": len(cells)}
                now = datetime.now(UTC)
                await connection.execute(
                    insert(Thread.__table__).values(**thread, **counts, last_activity_at=now)
                )
                message = {"thread_id": thread_id, "role": "tool", "is_user_facing": True}
                rows = [
                    {"id": uuid7(), "position": n, "seq": n, "tool_activity": cell, **message}
                    for n, cell in enumerate(cells, start=1)
                ]
                await connection.execute(insert(ThreadMessage.__table__), rows)
        await engine.dispose()
        return shapes, bulk

    return asyncio.run(write())


def _cells(url: str, thread_id: UUID) -> list[dict[str, Any]]:
    async def read() -> list[dict[str, Any]]:
        engine = create_async_engine(url, poolclass=NullPool)
        async with engine.connect() as connection:
            table = ThreadMessage.__table__
            query = (
                select(table.c.tool_activity)
                .where(table.c.thread_id == thread_id)
                .order_by(table.c.position)
            )
            cells = list((await connection.execute(query)).scalars())
        await engine.dispose()
        return cells

    return asyncio.run(read())


@pytest.fixture
def migrated(empty_database: str) -> Iterator[tuple[str, UUID, UUID]]:
    alembic(empty_database, "upgrade", BEFORE)
    seed_user(empty_database, EMAIL, PASSWORD, token=TOKEN)
    shapes, bulk = _populate(empty_database)
    alembic(empty_database, "upgrade", REVISION)
    yield empty_database, shapes, bulk


def _server_decodes(cell: dict[str, Any]) -> str:
    """The cell through the server's own types: ToolActivity, its data through the union
    of every kind (or, for a type the union does not name, the published fallback)."""
    msgspec.convert(cell, ToolActivity)
    data = cell["data"]
    kinds = {str(k.__struct_config__.tag): k for k in assembly.data_types()}
    if data["type"] in kinds:
        msgspec.convert(data, kinds[data["type"]])
    else:
        assert data["type"] == assembly.UNTYPED
    return data["type"]


def test_old_cells_get_the_type_of_what_they_hold(migrated: tuple[str, UUID, UUID]) -> None:
    url, shapes, bulk = migrated
    cells = _cells(url, shapes)
    for (old, expected), cell in zip(OLD_CELLS, cells, strict=True):
        if expected is None:
            assert cell == old  # typed already, or no data
            continue
        assert _server_decodes(cell) == expected, (old, cell)
        assert cell | {"data": old["data"]} == old  # the rest of the cell as it was
    assert cells[4]["data"] == {
        "type": "device_result", "tool": "get_location", "result": OLD_CELLS[4][0]["data"],
    }  # fmt: skip
    assert cells[1]["data"]["error"] == "The page did not load."
    assert cells[1]["data"]["output"] == "Otters are"  # what it streamed is kept
    assert cells[7]["data"] == {"type": "untyped", "value": ["not", "an", "object"]}
    assert {cell["data"]["type"] for cell in _cells(url, bulk)} == {"progress"}
    # and back: nothing to undo (the type stays), and up again
    alembic(url, "downgrade", BEFORE)
    alembic(url, "upgrade", "head")
    assert _cells(url, shapes) == cells


def test_a_generated_client_decodes_the_migrated_page(
    generated: str,  # noqa: F811
    migrated: tuple[str, UUID, UUID],
) -> None:
    """The app in this process (Litestar's test client as the generated client's httpx
    client): the page as it is served, decoded by the generated models."""
    url, shapes, _ = migrated
    client_mod = module_of(generated, "client")
    list_messages = module_of(generated, "api.messages.list_messages")
    app = create_app(Settings(database_url=url, runner_enabled=False))
    with TestClient(app) as http:
        http.headers["Authorization"] = f"Bearer {TOKEN}"
        client = client_mod.Client(base_url=str(http.base_url), raise_on_unexpected_status=True)
        page = list_messages.sync(shapes, client=client.set_httpx_client(http), after_seq=0)
    kinds = [type(m.tool_activity.data).__name__ for m in page.items]
    assert kinds == [
        "ToolProgress", "ToolError", "ToolError", "DelegationResult", "DeviceToolOutput",
        "UnknownData", "UnknownData", "UnknownData", "TaskToolResult", "Unset",
    ]  # fmt: skip
    assert page.items[5].tool_activity.data.type_ == "untyped"


def test_the_frozen_rules_agree_with_the_code_of_today() -> None:
    migration = _migration()
    assert {tool.name for tool in assembly.builtin_tools()} == migration.BUILTIN_TOOLS
    assert set(activity.OPEN_STATUSES) == migration.OPEN_STATUSES
    assert (migration.SPECIALIST_PREFIX, migration.MCP_SEPARATOR) == (PREFIX, SEPARATOR)
    assert migration.UNTYPED == assembly.UNTYPED
    union = assembly.data_components()["ToolData"]["discriminator"]["mapping"]
    assert {"progress", "error", "delegation_result", "device_result"} <= set(union)
    assert migration.UNTYPED not in union  # the fallback member's, never a known kind's
