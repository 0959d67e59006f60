"""Pre-flight tool calls given by the tool's name alone (`tool_calls: ["tasks"]`)."""

from __future__ import annotations

import json

from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Text


async def test_a_name_alone_runs_the_tools_no_argument_action(api: OrchestratorApi) -> None:
    api.llm.script(Text("You have no tasks."))
    thread_id, run = await api.turn("what is on my list?", tool_calls=["tasks"])
    assert run["status"] == "completed", run
    [cell] = [m["tool_activity"] for m in await api.tool_messages(thread_id)]
    assert cell["name"] == "tasks" and cell["status"] == "success", cell
    assert cell["input"] == {"action": "list"}
    [result] = [m for m in api.llm.requests[0]["messages"] if m["role"] == "tool"]
    assert json.loads(result["content"])["ok"] is True


async def test_a_name_alone_without_such_an_action_says_what_is_needed(
    api: OrchestratorApi,
) -> None:
    api.llm.script(Text("I need more to go on."))
    thread_id, run = await api.turn("echo", tool_calls=["test_echo", "test_slow", "memory"])
    assert run["status"] == "completed", run
    echo, slow, memory = [m["tool_activity"] for m in await api.tool_messages(thread_id)]
    assert echo["status"] == "failure" and echo["error_type"] == "validation_error"
    assert "echo (text)" in echo["error"], echo
    # a side-effecting action is never run by a bare name, even without required parameters
    assert slow["status"] == "failure" and "wait (no parameters)" in slow["error"], slow
    assert memory["status"] == "success" and memory["input"] == {"action": "recall"}
    model_sees = [
        json.loads(m["content"]) for m in api.llm.requests[0]["messages"] if m["role"] == "tool"
    ]
    assert model_sees[0]["allowed_actions"] == ["echo"]
    assert model_sees[0]["required_params"] == {"echo": ["text"]}
    assert '"name": "test_echo", "args": {"action":"echo"' in model_sees[0]["suggestion"]
