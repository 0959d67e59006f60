"""A tool cell's `data`, as the API serves it, matches the schema GET /api/tools publishes."""

from __future__ import annotations

from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls
from tests.support.result_schemas import assert_cells_match_schema, result_schema_errors


async def test_cells_data_decodes_with_the_published_result_schema(api: OrchestratorApi) -> None:
    api.llm.script(
        ToolCalls(Call("memory", {"action": "save", "key": "dentist", "content": "Mondays"})),
        Text("Noted."),
    )
    create = {"action": "create", "title": "Book dentist", "due_at": "2026-03-02T09:00:00Z"}
    thread_id, run = await api.turn("Remind me", tool_calls=[{"name": "tasks", "args": create}])
    assert run["status"] == "completed", run
    tools = (await api.client.get("/api/tools", headers=api.headers)).json()["items"]
    schemas = {t["name"]: t["result_schemas"] for t in tools}
    components = (await api.client.get("/schema/openapi.json")).json()["components"]
    cells = [m["tool_activity"] for m in await api.tool_messages(thread_id)]
    assert [(c["name"], c["status"]) for c in cells] == [
        ("tasks", "success"),
        ("memory", "success"),
    ]
    for cell in cells:
        reference = schemas[cell["name"]][cell["input"]["action"]]
        assert result_schema_errors(reference, cell["data"], components) == [], cell
    assert (
        cells[0]["data"]["type"] == "task" and cells[0]["data"]["due_at"] == "2026-03-02T09:00:00Z"
    )


async def _every_cell(api: OrchestratorApi, thread_id: str) -> list[dict]:
    """The thread's cells as GET …/messages serves them, and as each run's trace does."""
    cells = [m["tool_activity"] for m in await api.tool_messages(thread_id)]
    runs = {m["run_id"] for m in await api.messages(thread_id) if m["run_id"]}
    for run_id in runs:
        for result in (await api.get_run(thread_id, run_id))["tool_results"]:
            cells.append({**result, "id": result["tool_call_id"]})
    return cells


async def test_every_builtin_action_and_error_stores_data_of_its_type(
    api: OrchestratorApi,
) -> None:
    """Every action of every builtin tool, a specialist's answer and failed calls, run
    through real turns: each cell's data decodes as the `ToolData` union says."""
    assistant = await api.add_agent(name="Everything", agent_type="assistant")
    await api.add_agent(name="Researcher", agent_type="specialist")
    agent_id = assistant.id
    await api.db.commit()  # end the read: SQLite writers wait for readers
    thread_id = await api.new_thread(agent_id)
    api.llm.script(
        ToolCalls(
            Call("tasks", {"action": "create", "title": "Buy milk"}),
            Call("memory", {"action": "save", "key": "coffee", "content": "Black."}),
            Call("self_authoring", {"action": "view"}),
            Call(
                "self_authoring",
                {"action": "update", "field": "reflection_prompt", "value": "Be brief."},
            ),
            Call("web", {"action": "search", "query": "litestar"}),  # not configured
            Call("web", {"action": "fetch", "url": "http://127.0.0.1/"}),  # refused
            Call("tasks", {"action": "crawl"}),  # no such action
        ),
        ToolCalls(
            Call("tasks", {"action": "list", "status": "all"}),
            Call("memory", {"action": "recall"}),
            Call("memory", {"action": "search", "query": "black"}),
            Call("ask_researcher", {"message": "find x"}),
        ),
        Text("x is 42"),  # the researcher
        Text("Done."),
    )
    _, run = await api.turn("Do everything", thread_id)
    assert run["status"] == "completed", run
    [created] = [c for c in await _every_cell(api, thread_id) if c["name"] == "tasks"][:1]
    task_id = created["data"]["task_id"]
    api.llm.script(
        ToolCalls(
            Call("tasks", {"action": "update", "task_id": task_id, "title": "Buy oat milk"}),
            Call("tasks", {"action": "complete", "task_id": task_id}),
            Call("memory", {"action": "forget", "key": "coffee"}),  # asks first
        ),
        Text("Updated."),
    )
    posted = await api.post(thread_id, "And the rest")
    waiting = await api.wait_activity("awaiting_approval", "memory")
    decided = await api.decide(thread_id, waiting["id"], True)
    assert decided.status_code == 200, decided.text
    run = await api.wait_run(thread_id, posted.json()["run"]["id"])
    assert run["status"] == "completed", run

    cells = await _every_cell(api, thread_id)
    assert_cells_match_schema(cells)
    assert_cells_match_schema(api.frames.cells())  # running, waiting and finished states
    kinds = {c["data"]["type"] for c in cells}
    expected = {"task", "task_list", "memory", "memories", "config", "error"}
    assert kinds == {*expected, "delegation_result"}
    failed = {c["data"]["error_type"] for c in cells if c["status"] == "failure"}
    assert failed == {"system_error", "security_error", "validation_error"}
    [crawl] = [c for c in cells if (c["input"] or {}).get("action") == "crawl"][:1]
    assert crawl["data"]["allowed_actions"] == ["create", "update", "complete", "list"]
