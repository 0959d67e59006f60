"""Every action publishes the schema of its result, and what the tools return matches it."""

from __future__ import annotations

import json

import pytest

from app.openapi_export import OPENAPI_FILE
from app.tools.assembly import builtin_tools, get_registry
from tests.support.result_schemas import assert_matches_result_schema, result_schema_errors
from tests.tools.conftest import ToolHarness


@pytest.mark.parametrize("tool", builtin_tools(), ids=lambda t: t.name)
def test_every_action_declares_its_result_and_it_is_a_component(tool) -> None:
    assert set(tool.results) == set(tool.actions)
    schemas = json.loads(OPENAPI_FILE.read_text())["components"]["schemas"]
    [entry] = [e for e in get_registry().catalog() if e.name == tool.name]
    for action, struct in tool.results.items():
        ref = entry.result_schemas[action]
        assert ref == {"$ref": f"#/components/schemas/{struct.__name__}"}
        assert schemas[struct.__name__]["properties"]["type"]["const"]


CALLS = [
    ("tasks", {"action": "create", "title": "Buy milk", "due_at": "2026-03-02T09:00:00.123+01:00"}),
    ("tasks", {"action": "list", "status": "all"}),
    ("memory", {"action": "save", "key": "coffee", "content": "Black.", "tags": ["food"]}),
    ("memory", {"action": "recall"}),
    ("memory", {"action": "recall", "key": "coffee"}),
    ("memory", {"action": "search", "query": "black"}),
    ("self_authoring", {"action": "view"}),
    ("self_authoring", {"action": "view", "field": "reflection_prompt"}),
    ("self_authoring", {"action": "update", "field": "name", "value": "Renamed"}),
    ("schedules", {"action": "list"}),
]


async def test_each_action_returns_data_matching_its_schema(harness: ToolHarness) -> None:
    harness.allowed = [*harness.allowed, "self_authoring", "schedules"]
    created = None
    for tool, arguments in CALLS:
        result = await harness.call(tool, arguments)
        assert result.ok, (tool, arguments, result)
        assert_matches_result_schema(tool, arguments["action"], result.data)
        created = result.data if arguments["action"] == "create" else created
    assert created is not None and created["due_at"] == "2026-03-02T08:00:00Z"
    for action in ("complete", "update"):
        extra = {"title": "Oat milk"} if action == "update" else {}
        task = {"action": action, "task_id": created["task_id"], **extra}
        result = await harness.call("tasks", task)
        assert_matches_result_schema("tasks", action, result.data)
    forgotten = await harness.call("memory", {"action": "forget", "key": "coffee"})
    assert forgotten.ok, forgotten
    assert_matches_result_schema("memory", "forget", forgotten.data)


def test_the_check_rejects_data_of_another_shape() -> None:
    ref = {"$ref": "#/components/schemas/TaskToolResult"}
    assert result_schema_errors(ref, {"type": "task", "task_id": "not-a-uuid"})
    due = {
        "type": "task",
        "task_id": "0b6a5c1e-4d3f-4e2a-9c8b-7a6f5e4d3c2b",
        "task_title": "t",
        "task_status": "active",
        "notes": None,
        "due_at": "2026-03-02T08:00:00.5+00:00",
    }
    assert result_schema_errors(ref, due) == [
        "['due_at']: '2026-03-02T08:00:00.5+00:00' is not a 'date-time'"
    ]
