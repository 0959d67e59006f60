"""A tool call's own writes and its cell's final state are one transaction (app/tools/unit.py):
a change is kept exactly when its cell says the call succeeded."""

from __future__ import annotations

from uuid import UUID

from sqlalchemy import func, select, text

from app.db.models import Task
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls

BOTH_DOORS = False


async def _tasks_titled(api: OrchestratorApi, title: str) -> int:
    api.db.expire_all()
    return int(await api.db.scalar(select(func.count()).where(Task.title == title)) or 0)


async def test_a_failed_call_keeps_nothing_and_a_good_one_keeps_its_change(
    api: OrchestratorApi,
) -> None:
    api.llm.script(
        ToolCalls(
            Call("test_write", {"action": "write", "title": "kept"}),
            Call("test_write", {"action": "write", "title": "dropped", "fail": True}),
            Call("test_write", {"action": "write", "title": "also kept"}),
        ),
        Text("Done."),
    )
    # wait_run gives up after 10 s: a progress write queued behind its own call's held
    # unit on SQLite (a deadlock until the busy timeout) would fail this test
    thread_id, run = await api.turn("write three")
    assert run["status"] == "completed", run
    activities = [t["tool_activity"] for t in await api.tool_messages(thread_id)]
    assert [a["status"] for a in activities] == ["success", "failure", "success"]
    assert await _tasks_titled(api, "kept") == 1
    assert await _tasks_titled(api, "also kept") == 1
    assert await _tasks_titled(api, "dropped") == 0  # the model was told it failed


async def test_the_change_and_its_cell_commit_in_one_transaction(
    api: OrchestratorApi, dialect: str
) -> None:
    api.llm.script(ToolCalls(Call("tasks", {"action": "create", "title": "Buy milk"})), Text("Ok."))
    thread_id, run = await api.turn("remind me to buy milk")
    assert run["status"] == "completed", run
    [cell] = await api.tool_messages(thread_id)
    assert cell["tool_activity"]["status"] == "success"
    task_id = UUID(cell["tool_activity"]["data"]["task_id"])
    assert await _tasks_titled(api, "Buy milk") == 1
    if dialect != "postgresql":
        return  # SQLite has no transaction ids to compare; the test above covers it
    # PostgreSQL stamps every row version with the id of the transaction that wrote it
    xmin = "SELECT xmin::text FROM {} WHERE id = :id"
    task_xid = await api.db.scalar(text(xmin.format("tasks")), {"id": task_id})
    cell_xid = await api.db.scalar(text(xmin.format("thread_messages")), {"id": UUID(cell["id"])})
    assert task_xid == cell_xid
