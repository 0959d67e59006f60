"""A tool cell's `data`, as the API serves it, matches the schema GET /api/tools publishes."""

from __future__ import annotations

from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls
from tests.support.result_schemas import result_schema_errors


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
