"""Device tools declared in the agent-types file: checked at startup, named by toolsets."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.tools.assembly import get_registry
from app.tools.runtime.toolsets import (
    AgentTypesError,
    device_tools,
    effective_tools,
    known_tool_names,
    load_agent_types,
    parse_device_tools,
)

SERVER_TOOLS = ["tasks", "web", "memory", "self_authoring"]


@pytest.fixture(autouse=True)
def shipped_agent_types() -> Iterator[None]:
    load_agent_types(tool_names=get_registry().names)
    yield
    load_agent_types()


def _file(device_tools_yaml: str) -> str:
    return "agent_types:\n  a:\n    tools: [tasks]\ndevice_tools:\n" + device_tools_yaml


def test_shipped_device_tools_are_known_and_offered_by_the_companion() -> None:
    assert set(device_tools()) == {"device_location", "calendar_events"}
    assert {"device_location", "calendar_events"} <= set(known_tool_names())
    assert effective_tools("companion", None) == [
        "tasks", "memory", "device_location", "calendar_events"
    ]  # fmt: skip
    definitions = get_registry().function_definitions(["tasks", "device_location"])
    assert [d["function"]["name"] for d in definitions] == ["tasks", "device_location"]
    assert definitions[1]["function"]["parameters"]["type"] == "object"


@pytest.mark.parametrize(
    ("declaration", "says"),
    [
        ("  bad name:\n    description: x\n", "must match"),
        ("  tasks:\n    description: x\n", "name of a server tool"),
        ("  loc:\n    description: x\n    parameters: {type: array}\n", "must describe an object"),
        ("  loc:\n    description: x\n    parameters: {type: 3}\n", "not a valid JSON Schema"),
        (
            "  loc:\n    description: x\n    result_schema: {type: object, required: 1}\n",
            "result_schema is not a valid JSON Schema",
        ),
        ("  loc:\n    description: x\n    timeout_seconds: 0\n", "timeout_seconds"),
        ("  loc:\n    description: x\n    executor: phone\n", "executor"),
    ],
)
def test_a_bad_declaration_stops_startup_with_a_clear_message(declaration: str, says: str) -> None:
    with pytest.raises(AgentTypesError) as caught:
        parse_device_tools(_file(declaration), SERVER_TOOLS, source="types.yaml")
    assert "types.yaml" in str(caught.value) and says in str(caught.value)


def test_a_good_declaration_gets_defaults() -> None:
    tools = parse_device_tools(_file("  loc:\n    description: Where.\n"), SERVER_TOOLS)
    assert tools["loc"].name == "loc" and tools["loc"].timeout_seconds == 600
    assert tools["loc"].parameters == {"type": "object", "properties": {}}
    assert tools["loc"].result_schema is None
