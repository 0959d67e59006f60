"""tasks: create, update, complete, list for the current user (seed 002 data shape)."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Task
from app.tools.assembly import get_registry
from app.tools.runtime.executor import parse_call
from tests.conftest import ApiUser
from tests.tools.conftest import MakeHarness, ToolHarness


async def test_create_returns_task_fields_and_stores_origin(
    harness: ToolHarness, db: AsyncSession
) -> None:
    result = await harness.call(
        "tasks", {"action": "create", "title": "Buy milk", "due_at": "2026-12-01T09:00:00Z"}
    )
    assert result.ok, result
    assert result.data["type"] == "task"
    assert result.data["task_title"] == "Buy milk"
    assert result.data["task_status"] == "active"
    assert result.data["due_at"].startswith("2026-12-01T09:00:00")
    assert result.display_message == "Created “Buy milk”"
    # said by the in_progress cell itself, not by a progress write of its own
    assert harness.progress.calls == []
    tool, action, params = parse_call(
        get_registry(), "tasks", {"action": "create", "title": "Buy milk"}
    )
    assert tool.start_message(action, params) == "Creating task…"
    task = await db.scalar(select(Task).where(Task.id == uuid.UUID(result.data["task_id"])))
    assert task.owner_id == harness.ctx.user.id
    assert (task.agent_id, task.thread_id) == (harness.ctx.agent.id, harness.ctx.thread_id)


async def test_update_complete_and_list(harness: ToolHarness) -> None:
    created = await harness.call("tasks", {"action": "create", "title": "Draft"})
    task_id = created.data["task_id"]
    updated = await harness.call(
        "tasks", {"action": "update", "task_id": task_id, "title": "Final", "notes": "n"}
    )
    assert updated.ok and updated.data["task_title"] == "Final" and updated.data["notes"] == "n"
    active = await harness.call("tasks", {"action": "list"})
    assert [t["task_id"] for t in active.data["tasks"]] == [task_id]
    done = await harness.call("tasks", {"action": "complete", "task_id": task_id})
    assert done.ok and done.data["task_status"] == "completed"
    # A list after a side effect is not answered from the earlier (stale) list.
    active_again = await harness.call("tasks", {"action": "list"})
    assert not active_again.duplicate and active_again.data["tasks"] == []
    assert active_again.display_message == "No active tasks"
    everything = await harness.call("tasks", {"action": "list", "status": "all"})
    assert everything.data["count"] == 1
    assert everything.display_message == "1 task"
    reopened = await harness.call(
        "tasks", {"action": "update", "task_id": task_id, "status": "active"}
    )
    assert reopened.data["task_status"] == "active"


async def test_the_app_sees_tool_created_tasks(
    harness: ToolHarness, client, alice: ApiUser
) -> None:
    await harness.call("tasks", {"action": "create", "title": "From the tool"})
    response = await client.get("/api/tasks", headers=alice.headers)
    assert [t["title"] for t in response.json()["items"]] == ["From the tool"]


async def test_unknown_task_is_a_user_error(harness: ToolHarness) -> None:
    result = await harness.call("tasks", {"action": "complete", "task_id": str(uuid.uuid4())})
    assert result.error_type == "user_error"
    assert "list" in result.suggestion


async def test_another_users_task_is_invisible(
    make_harness: MakeHarness, alice: ApiUser, bob: ApiUser
) -> None:
    alice_tools, bob_tools = await make_harness(alice), await make_harness(bob)
    created = await alice_tools.call("tasks", {"action": "create", "title": "Mine"})
    stolen = await bob_tools.call(
        "tasks", {"action": "update", "task_id": created.data["task_id"], "title": "Yours"}
    )
    assert stolen.error_type == "user_error"
    listed = await bob_tools.call("tasks", {"action": "list", "status": "all"})
    assert listed.data["tasks"] == []


async def test_update_without_changes(harness: ToolHarness) -> None:
    created = await harness.call("tasks", {"action": "create", "title": "x"})
    result = await harness.call("tasks", {"action": "update", "task_id": created.data["task_id"]})
    assert result.error_type == "validation_error" and result.error == "Nothing to update."


async def test_validation_errors(harness: ToolHarness) -> None:
    missing = await harness.call("tasks", {"action": "complete"})
    assert missing.details["required_param"] == "task_id"
    assert missing.details["example"] == {"action": "complete", "task_id": "<task_id from list>"}
    bad_id = await harness.call("tasks", {"action": "complete", "task_id": "42"})
    assert bad_id.details["errors"] == [{"field": "task_id", "message": "Invalid UUID"}]
    empty = await harness.call("tasks", {"action": "create", "title": ""})
    assert empty.details["errors"][0]["field"] == "title"
    long_title = await harness.call("tasks", {"action": "create", "title": "x" * 501})
    assert long_title.details["errors"][0]["field"] == "title"
    bad_date = await harness.call("tasks", {"action": "create", "title": "x", "due_at": "soon"})
    assert bad_date.details["errors"][0]["field"] == "due_at"
    naive = await harness.call(
        "tasks", {"action": "create", "title": "x", "due_at": "2026-12-01T09:00:00"}
    )
    assert naive.error_type == "validation_error"
    assert naive.details["errors"][0]["field"] == "due_at"
    assert "timezone" in naive.details["errors"][0]["message"]
    for year_one in ("0001-01-01T00:00:00+01:00", "9999-12-31T23:00:00-05:00"):
        far = await harness.call("tasks", {"action": "create", "title": "x", "due_at": year_one})
        assert far.error_type == "validation_error", far  # not a crash (system_error)
        assert "`due_at` must be a date between the years 1900 and 9000" in far.error
    big_limit = await harness.call("tasks", {"action": "list", "limit": 500})
    assert big_limit.details["errors"][0]["message"] == "Expected `int` <= 50"


async def test_same_create_twice_in_a_run_creates_one_task(
    harness: ToolHarness, db: AsyncSession
) -> None:
    first = await harness.call("tasks", {"action": "create", "title": "Once"})
    second = await harness.call("tasks", {"action": "create", "title": "Once"})
    assert second.duplicate and second.data == {
        **first.data,
        "duplicate_of": harness.ctx.tool_call_id,
    }
    count = len(list(await db.scalars(select(Task).where(Task.title == "Once"))))
    assert count == 1
