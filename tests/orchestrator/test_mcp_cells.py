"""MCP calls in real runs: each a cell on the thread, live while the server reports
progress, terminal in every failure case; listed in GET /api/tools and agents' tools.

The servers are real (official SDK, Streamable HTTP on sockets); the model is the fake.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec
import pytest
import yaml

from app.realtime.events import MessageFrame
from app.tools.mcp.demo_server import RunningServer
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls
from tests.support.mcp_servers import HANGS, bearer_required, build_test_app, running
from tests.support.test_tools import register_test_tools, write_agent_types

MESSAGE_LIMIT = 2 * 1024 * 1024  # the "bulk" server's max_message_bytes
ROW_BYTES = 130  # one row of the test server's `flood`, as JSON


@pytest.fixture(scope="module")
def mcp_server() -> Iterator[RunningServer]:
    with running(build_test_app()) as server:
        yield server


@pytest.fixture(scope="module")
def guarded_server() -> Iterator[RunningServer]:
    with running(bearer_required(build_test_app(), token="never-given")) as server:
        yield server


@pytest.fixture(scope="module")
def agent_types_file(
    tmp_path_factory: pytest.TempPathFactory,
    mcp_server: RunningServer,
    guarded_server: RunningServer,
    monkeypatch_module: pytest.MonkeyPatch,
) -> Path:
    register_test_tools()
    path = write_agent_types(tmp_path_factory.mktemp("mcp_agent_types"))
    data = yaml.safe_load(path.read_text())
    tools = ["count", "echo", "fail", "hang"]
    data["mcp_servers"] |= {
        "t": {"url": mcp_server.url, "tools": tools, "timeout_seconds": 1,
              "requires_confirmation": ["echo"]},
        # large answers take their time on a busy machine: a timeout of their own
        "bulk": {"url": mcp_server.url, "tools": ["flood"], "timeout_seconds": 60,
                 "max_message_bytes": MESSAGE_LIMIT},
        "locked": {"url": guarded_server.url, "headers": {"Authorization": "LOCKED_MCP_AUTH"}},
    }  # fmt: skip
    data["agent_types"]["tester"]["mcp_servers"] = ["t", "bulk"]
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LOCKED_MCP_AUTH", "Bearer wrong")
        yield patch


async def _turn(api: OrchestratorApi, call: Call) -> tuple[str, dict, dict]:
    api.llm.script(ToolCalls(call), Text("done"))
    thread_id, run = await api.turn("use the server")
    [cell] = [m["tool_activity"] for m in await api.tool_messages(thread_id)]
    return thread_id, run, cell


def _told(api: OrchestratorApi) -> dict:
    return msgspec.json.decode(api.llm.requests[1]["messages"][-1]["content"])


async def test_tools_are_listed_and_offered_to_the_model(api: OrchestratorApi) -> None:
    items = (await api.client.get("/api/tools", headers=api.headers)).json()["items"]
    tools = {tool["name"]: tool for tool in items}
    count = tools["t__count"]
    assert count["executor"] == "mcp" and count["mcp_server"] == "t"
    assert count["parameters"]["properties"]["steps"]["type"] == "integer"
    assert count["agent_types"] == ["tester"] and count["is_user_facing"]
    assert count["result_schemas"] == {"count": {"$ref": "#/components/schemas/McpToolResult"}}
    assert tools["t__echo"]["requires_confirmation"]
    assert not any(name.startswith("locked__") for name in tools)  # refused: left out
    agent = (await api.client.get(f"/api/agents/{api.user.agent.id}", headers=api.headers)).json()
    assert "t__count" in agent["tools"]

    api.llm.script(Text("hi"))
    await api.turn("hello")
    offered = [t["function"]["name"] for t in api.llm.requests[0]["tools"]]
    assert {"t__count", "t__echo", "t__fail", "t__hang"} <= set(offered)


async def test_progress_is_live_and_the_result_is_the_cell(api: OrchestratorApi) -> None:
    _, run, cell = await _turn(api, Call("t__count", {"steps": 3}))
    assert run["status"] == "completed", run
    assert cell["status"] == "success" and cell["input"] == {"action": "count", "steps": 3}
    assert cell["data"] == {
        "type": "mcp_result", "server": "t", "tool": "count",
        "structured_content": {"steps": 3, "note": "counted to 3"},
        "text": cell["data"]["text"],
    }  # fmt: skip
    assert cell["preview"] == ["steps: 3", "note: counted to 3"]
    live = [
        frame.message.tool_activity
        for _, frame in api.frames.frames
        if isinstance(frame, MessageFrame)
        and frame.message.tool_activity is not None
        and frame.message.tool_activity.status == "in_progress"
        and frame.message.tool_activity.name == "t__count"
    ]
    assert live[0].display_message == "Calling count on t…"
    reported = [a for a in live if (a.data or {}).get("total") == 3]
    assert reported, live  # at least one coalesced progress write reached the socket
    assert reported[-1].display_message.startswith("Step ")
    told = _told(api)
    assert told["ok"] and "counted to 3" in told["text"] and "structured_content" not in told


async def test_an_error_result_is_a_failure_the_model_reads(api: OrchestratorApi) -> None:
    _, run, cell = await _turn(api, Call("t__fail", {"reason": "no"}))
    assert run["status"] == "completed"
    assert cell["status"] == "failure" and cell["error_type"] == "user_error"
    assert "cannot do that: no" in cell["error"]
    assert _told(api)["error_type"] == "user_error"


async def test_bad_arguments_fail_before_the_server_is_asked(api: OrchestratorApi) -> None:
    _, _, cell = await _turn(api, Call("t__count", {"steps": "three"}))
    assert cell["error_type"] == "validation_error"


async def test_a_hanging_call_ends_as_timeout(api: OrchestratorApi) -> None:
    _, run, cell = await _turn(api, Call("t__hang", {}))
    assert run["status"] == "completed"
    assert cell["status"] == "failure" and cell["error_type"] == "timeout"


async def test_cancel_ends_the_cell_as_cancelled(api: OrchestratorApi) -> None:
    api.llm.script(ToolCalls(Call("t__hang", {})), Text("never"))
    thread_id = await api.new_thread()
    run_id = (await api.post(thread_id, "hang")).json()["run"]["id"]
    await api.wait_activity("in_progress", "t__hang")
    # the server has the call (the cell shows before the request reaches it)
    assert await _eventually(lambda: HANGS[-1:] == ["started"]), HANGS
    url = f"/api/threads/{thread_id}/runs/{run_id}/cancel"
    assert (await api.client.post(url, headers=api.headers)).status_code == 200
    run = await api.wait_run(thread_id, run_id)
    [cell] = [m["tool_activity"] for m in await api.tool_messages(thread_id)]
    assert run["status"] == "cancelled"
    assert cell["status"] == "failure" and cell["error_type"] == "cancelled"
    # The server is told (closing the call's response stream is the protocol's cancel):
    # its handler stops instead of working on for nobody.
    assert await _eventually(lambda: HANGS[-2:] == ["started", "cancelled"]), HANGS


async def _eventually(check: Callable[[], bool], seconds: float = 5.0) -> bool:
    for _ in range(int(seconds / 0.05)):
        if check():
            return True
        await asyncio.sleep(0.05)
    return check()


async def test_a_tool_that_needs_approval_waits_for_it(api: OrchestratorApi) -> None:
    api.llm.script(ToolCalls(Call("t__echo", {"text": "hi"})), Text("ok"))
    thread_id = await api.new_thread()
    run_id = (await api.post(thread_id, "echo")).json()["run"]["id"]
    message = await api.wait_activity("awaiting_approval", "t__echo")
    url = f"/api/threads/{thread_id}/messages/{message['id']}/approval"
    assert (await api.client.post(url, json={"approve": True}, headers=api.headers)).is_success
    assert (await api.wait_run(thread_id, run_id))["status"] == "completed"
    [cell] = [m["tool_activity"] for m in await api.tool_messages(thread_id)]
    assert cell["status"] == "success" and cell["data"]["text"] == "echo: hi"


async def test_the_demo_model_rolls_dice_on_the_bundled_server(api: OrchestratorApi) -> None:
    """What a new user sees offline: `roll 2 dice` is a live MCP cell."""
    agent = await api.add_agent(name="demo", agent_type="assistant", model="demo/tool-demo")
    thread_id = await api.new_thread(agent.id)
    response = await api.post(thread_id, "roll 2 dice")
    live = await api.wait_activity("in_progress", "demo__roll_dice", timeout=30)
    assert live["tool_activity"]["input"] == {"action": "roll_dice", "count": 2}
    run = await api.wait_run(thread_id, response.json()["run"]["id"], timeout=60)
    assert run["status"] == "completed", run
    [tool] = await api.tool_messages(thread_id)
    cell = tool["tool_activity"]
    assert cell["status"] == "success" and len(cell["data"]["structured_content"]["rolls"]) == 2
    rolls = cell["data"]["structured_content"]["rolls"]
    answer = (await api.messages(thread_id))[-1]["content"]  # in words, not the tool's JSON
    assert answer == f"You rolled {rolls[0]} and {rolls[1]} (total {sum(rolls)})."
    assert cell["preview"][0].startswith("rolls: ")
    assert api.llm.requests == []  # nothing went to the network


async def test_a_large_result_is_bounded_everywhere_and_the_question_stays(
    api: OrchestratorApi,
) -> None:
    """1.5 MB of structured content and no text (under the server's max_message_bytes):
    the cell, its frames and what the model reads are cut to TOOL_RESULT_MAX_BYTES, saying
    so; the user's question still reaches the model and the turn completes."""
    limit = api.app.state.settings.tool_result_max_bytes
    rows = 1_500_000 // ROW_BYTES
    api.llm.script(ToolCalls(Call("bulk__flood", {"rows": rows})), Text("done"))
    thread_id, run = await api.turn("what is in the flood?")
    [cell] = [m["tool_activity"] for m in await api.tool_messages(thread_id)]
    assert run["status"] == "completed", run
    assert cell["status"] == "success"
    data = cell["data"]
    assert data["truncated"] is True and data["original_size"] > 1_400_000
    assert data["type"] == "mcp_result" and data["server"] == "bulk" and data["tool"] == "flood"
    assert len(msgspec.json.encode(data)) <= limit + 64
    framed = [
        frame.message.tool_activity
        for _, frame in api.frames.frames
        if isinstance(frame, MessageFrame)
        and frame.message.tool_activity is not None
        and frame.message.tool_activity.name == "bulk__flood"
    ]
    assert framed and max(len(msgspec.json.encode(a)) for a in framed) <= 2 * limit
    sent = api.llm.requests[1]["messages"]
    assert len(sent[-1]["content"]) <= 2 * limit
    assert any(m["role"] == "user" and m["content"] == "what is in the flood?" for m in sent)


async def test_an_answer_past_the_servers_message_limit_is_refused_unread(
    api: OrchestratorApi,
) -> None:
    """5 MB of JSON from a server whose max_message_bytes is 2 MB: the call fails saying
    so (the answer is not read, nor parsed on the loop), the model is told, and the turn
    completes."""
    rows = 5_000_000 // ROW_BYTES
    api.llm.script(ToolCalls(Call("bulk__flood", {"rows": rows})), Text("too much"))
    thread_id, run = await api.turn("what is in the flood?")
    [cell] = [m["tool_activity"] for m in await api.tool_messages(thread_id)]
    assert run["status"] == "completed", run
    assert cell["status"] == "failure"
    assert cell["error_type"] == "system_error"
    assert cell["error"] == "flood on bulk answered more than 2 MB: the answer was not read."
    told = _told(api)
    assert "more than 2 MB" in told["error"] and "narrower" in told["suggestion"]
