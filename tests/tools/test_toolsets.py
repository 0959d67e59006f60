"""Agent types from YAML: validated at startup, effective toolsets, and the API surfaces."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app import create_app
from app.agents.serializers import agent_read
from app.db.models import Agent
from app.settings import Settings
from app.tools.assembly import get_registry
from app.tools.runtime import toolsets
from app.tools.runtime.toolsets import (
    AgentTypesError,
    effective_tools,
    get_agent_type,
    load_agent_types,
    parse_agent_types,
)
from tests.conftest import ApiUser

KNOWN = ["tasks", "web", "memory", "self_authoring", "schedules"]


@pytest.fixture(autouse=True)
def restore_agent_types() -> Iterator[None]:
    """The shipped agent types checked against the registered tools, as create_app does."""
    load_agent_types(tool_names=get_registry().names)
    yield
    load_agent_types()


def test_shipped_agent_types() -> None:
    assistant = get_agent_type("assistant")
    assert assistant.tools == KNOWN and assistant.delegation is True
    assert get_agent_type("specialist").tools == ["web", "memory"]
    focused = get_agent_type("focused")
    assert focused.double_texting == "reject" and focused.tools == ["tasks"]
    assert focused.planner is False and get_agent_type("planner").planner is True
    assert get_agent_type("nope") is None


def test_effective_tools() -> None:
    assert effective_tools("assistant", None) == KNOWN
    assert effective_tools("assistant", ["web", "tasks", "legacy_tool"]) == ["tasks", "web"]
    assert effective_tools("specialist", ["tasks", "web"]) == ["web"]
    assert effective_tools("assistant", []) == []
    assert effective_tools("unknown", None) == []


def test_unknown_tool_in_yaml_is_a_clear_error() -> None:
    text = "agent_types:\n  helper:\n    tools: [tasks, calendar]\n"
    with pytest.raises(AgentTypesError) as caught:
        parse_agent_types(text, KNOWN, source="types.yaml")
    message = str(caught.value)
    assert "types.yaml" in message and "'helper'" in message and "'calendar'" in message
    assert "known tools: tasks, web, memory, self_authoring" in message


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("agent_types: [", "not valid YAML"),
        ("agent_types: {}", "declares no agent types"),
        ("agent_types:\n  a:\n    tools: [web, web]\n", "lists a tool twice"),
        ("agent_types:\n  a:\n    tools: [web]\n    double_texting: maybe\n", "double_texting"),
        ("agent_types:\n  a:\n    tools: [web]\n    step_limit: 0\n", "step_limit"),
        ("agent_types:\n  a:\n    tools: [web]\n    colour: red\n", "colour"),
        ("agent_types:\n  a: {}\n", "tools"),
        ("types: {}", "agent_types"),
    ],
)
def test_invalid_yaml_is_rejected(text: str, fragment: str) -> None:
    with pytest.raises(AgentTypesError, match=fragment):
        parse_agent_types(text, KNOWN)


def test_startup_fails_on_an_unknown_tool(tmp_path: Path, restore_agent_types: None) -> None:
    bad = tmp_path / "agent_types.yaml"
    bad.write_text("agent_types:\n  assistant:\n    tools: [tasks, teleport]\n")
    with pytest.raises(AgentTypesError, match="unknown tool\\(s\\) 'teleport'"):
        create_app(Settings(agent_types_file=str(bad), runner_enabled=False))
    missing = tmp_path / "missing.yaml"
    with pytest.raises(AgentTypesError, match="Cannot read agent types file"):
        create_app(Settings(agent_types_file=str(missing), runner_enabled=False))


def test_a_toolset_changes_in_yaml_without_code(tmp_path: Path, restore_agent_types: None) -> None:
    custom = tmp_path / "agent_types.yaml"
    custom.write_text(
        "agent_types:\n  assistant:\n    tools: [memory]\n  scout:\n    tools: [web]\n"
    )
    create_app(Settings(agent_types_file=str(custom), runner_enabled=False))
    agent = Agent(
        id=uuid.uuid4(), name="a", agent_type="assistant", enabled_tools=None, is_shared=False
    )
    assert agent_read(agent).tools == ["memory"]
    assert toolsets.agent_type_names() == ["assistant", "scout"]


async def test_tool_catalog(client: httpx.AsyncClient, alice: ApiUser) -> None:
    assert (await client.get("/api/tools")).status_code == 401
    response = await client.get("/api/tools", headers=alice.headers)
    assert response.status_code == 200
    items = {item["name"]: item for item in response.json()["items"]}
    assert list(items)[: len(KNOWN)] == KNOWN  # other suites may register test tools after these
    memory = items["memory"]
    assert memory["actions"] == ["save", "recall", "search", "forget"]
    assert memory["is_user_facing"] is True and memory["non_user_facing_actions"] == ["recall"]
    assert memory["requires_confirmation"] is True and memory["confirmation_actions"] == ["forget"]
    assert items["tasks"]["requires_confirmation"] is False
    assert items["schedules"]["confirmation_actions"] == ["create"]  # the user approves
    assert memory["parameters"]["additionalProperties"] is False
    assert memory["parameters"]["properties"]["action"]["enum"] == memory["actions"]
    assert items["tasks"]["agent_types"] == ["assistant", "focused", "companion", "planner"]
    assert items["web"]["agent_types"] == ["assistant", "specialist", "planner"]
    # one line from the JSON Schema: the action's values, `?` on what may be left out
    assert items["tasks"]["params_hint"] == (
        "action: create|update|complete|list, title?, notes?, due_at?, remind_before_minutes?, "
        "task_id?, status?, limit?"
    )
    assert items["web"]["params_hint"] == "action: search|fetch, query?, url?"


def test_params_hint_of_any_schema() -> None:
    from app.tools.schema import params_hint

    schema = {
        "type": "object",
        "properties": {"message": {"type": "string"}, "mode": {"enum": ["a", "b"]}, "n": {}},
        "required": ["message", "mode"],
    }
    assert params_hint(schema) == "message, mode: a|b, n?"
    long = {"properties": {f"parameter_{i}": {} for i in range(30)}}
    assert len(params_hint(long)) == 160 and params_hint(long).endswith("…")


async def test_agent_tools_field_and_validation(client: httpx.AsyncClient, alice: ApiUser) -> None:
    created = await client.post(
        "/api/agents",
        json={"name": "Scout", "agent_type": "specialist", "enabled_tools": ["tasks", "web"]},
        headers=alice.headers,
    )
    assert created.status_code == 201, created.text
    assert created.json()["tools"] == ["web"]  # tasks is not in the specialist's toolset
    unknown_tool = await client.post(
        "/api/agents",
        json={"name": "X", "enabled_tools": ["web", "teleport"]},
        headers=alice.headers,
    )
    assert unknown_tool.status_code == 400
    body = unknown_tool.json()
    assert body["errors"][0]["field"] == "enabled_tools[1]"
    assert "teleport" in body["errors"][0]["message"]
    unknown_type = await client.post(
        "/api/agents", json={"name": "Y", "agent_type": "wizard"}, headers=alice.headers
    )
    assert unknown_type.status_code == 400
    assert unknown_type.json()["errors"][0]["field"] == "agent_type"
    assert "focused" in unknown_type.json()["errors"][0]["message"]
    agent_id = created.json()["id"]
    patched = await client.patch(
        f"/api/agents/{agent_id}", json={"enabled_tools": ["nope"]}, headers=alice.headers
    )
    assert patched.status_code == 400 and patched.json()["errors"][0]["field"] == "enabled_tools[0]"
    cleared = await client.patch(
        f"/api/agents/{agent_id}", json={"enabled_tools": None}, headers=alice.headers
    )
    assert cleared.json()["tools"] == ["web", "memory"]
