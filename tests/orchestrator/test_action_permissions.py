"""Action-level permissions: an agent whose enabled_tools name one action of a domain tool
(`tasks.list`, or the legacy `list_tasks` that `litestar tools consolidate` turns into it)
may call that action only; another is refused naming the allowed ones."""

from __future__ import annotations

import json

import pytest

from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls


@pytest.mark.parametrize("enabled", [["tasks.list"], ["list_tasks"]])
async def test_an_agent_allowed_to_list_tasks_cannot_create_one(
    api: OrchestratorApi, enabled: list[str]
) -> None:
    agent_id = str(api.user.agent.id)
    await api.db.commit()
    patched = await api.client.patch(
        f"/api/agents/{agent_id}", json={"enabled_tools": enabled}, headers=api.headers
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["tools"] == ["tasks"]
    api.llm.script(
        ToolCalls(
            Call("tasks", {"action": "create", "title": "Sneaky"}),
            Call("tasks", {"action": "list"}),
        ),
        Text("I may only list."),
    )
    thread_id, run = await api.turn("add a task")
    assert run["status"] == "completed", run
    create, listing = [m["tool_activity"] for m in await api.tool_messages(thread_id)]
    assert create["status"] == "failure" and create["error_type"] == "permission_error"
    assert create["error"] == "tasks.create is not allowed for this agent."
    assert listing["status"] == "success"
    told = [
        json.loads(m["content"]) for m in api.llm.requests[1]["messages"] if m["role"] == "tool"
    ]
    assert told[0]["allowed_actions"] == ["list"]
    tasks = (await api.client.get("/api/tasks", headers=api.headers)).json()["items"]
    assert tasks == []  # nothing was created


async def test_an_unknown_action_in_enabled_tools_is_refused(api: OrchestratorApi) -> None:
    agent_id = str(api.user.agent.id)
    await api.db.commit()
    typo = await api.client.patch(
        f"/api/agents/{agent_id}", json={"enabled_tools": ["tasks.archive"]}, headers=api.headers
    )
    assert typo.status_code == 400, typo.text
    assert "tasks.archive" in typo.json()["detail"]
