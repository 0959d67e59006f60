"""An MCP tool that asks the user for input (elicitation, the 2026-07-28 `input_required`
result): the cell waits as `awaiting_input` with the requested schema, is replayed like
any cell (and pushed like an approval: app/push, tests/push/test_payload_times.py); the app's answer goes back to the server and the
call goes on; no answer in time ends the call as a timeout.

The server is real (official SDK, Streamable HTTP on a socket); the model is the fake.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from uuid import UUID

import pytest
import yaml

from app.realtime.events import MessageFrame
from app.tools.mcp.demo_server import RunningServer
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls
from tests.support.mcp_servers import build_test_app, running
from tests.support.test_tools import register_test_tools, write_agent_types

TTL_SECONDS = 4.0  # how long a question waits (APPROVAL_TTL_SECONDS), for the expiry test


@pytest.fixture(scope="module")
def mcp_server() -> Iterator[RunningServer]:
    with running(build_test_app()) as server:
        yield server


@pytest.fixture(scope="module")
def agent_types_file(tmp_path_factory: pytest.TempPathFactory, mcp_server: RunningServer) -> Path:
    register_test_tools()
    path = write_agent_types(tmp_path_factory.mktemp("mcp_input_types"))
    data = yaml.safe_load(path.read_text())
    # a call's own limit far below the wait: the wait for the user does not count against it
    data["mcp_servers"]["t"] = {"url": mcp_server.url, "tools": ["book"], "timeout_seconds": 2}
    data["agent_types"]["tester"]["mcp_servers"] = ["t"]
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def settings_overrides() -> dict:
    return {"mcp_demo_server": False, "approval_ttl_seconds": TTL_SECONDS}


async def _asked(api: OrchestratorApi) -> tuple[str, str, dict]:
    """Start a turn whose call asks for input: (thread id, run id, the waiting message)."""
    api.llm.script(ToolCalls(Call("t__book", {"show": "Hamlet"})), Text("done"))
    thread_id = await api.new_thread()
    posted = await api.post(thread_id, "book Hamlet")
    assert posted.status_code == 202, posted.text
    message = await api.wait_activity("awaiting_input", "t__book")
    return thread_id, posted.json()["run"]["id"], message


def _input_url(thread_id: str, message: dict) -> str:
    return f"/api/threads/{thread_id}/messages/{message['id']}/input"


async def test_an_accepted_answer_goes_back_to_the_server(api: OrchestratorApi) -> None:
    thread_id, run_id, message = await _asked(api)
    activity = message["tool_activity"]
    request = activity["data"]["input_request"]
    assert request["mode"] == "form" and request["message"] == "How many seats for Hamlet?"
    assert request["requested_schema"]["required"] == ["seats"]
    assert activity["display_message"] == request["message"] and activity["expires_at"]

    # A client that reconnects reads the question from the stored cell.
    [stored] = await api.tool_messages(thread_id)
    assert stored["tool_activity"]["status"] == "awaiting_input"
    assert stored["tool_activity"]["data"]["input_request"] == request

    url = _input_url(thread_id, message)
    wrong = await api.client.post(
        url, json={"action": "accept", "content": {"seats": "two"}}, headers=api.headers
    )
    assert wrong.status_code == 400 and wrong.json()["errors"][0]["field"] == "seats"
    answered = await api.client.post(
        url, json={"action": "accept", "content": {"seats": 2}}, headers=api.headers
    )
    assert answered.status_code == 200, answered.text
    run = await api.wait_run(thread_id, run_id)
    assert run["status"] == "completed", run
    [done] = await api.tool_messages(thread_id)
    cell = done["tool_activity"]
    assert cell["status"] == "success" and cell["data"]["text"] == "booked 2 for Hamlet"
    assert "input_request" not in cell["data"] and "input_response" not in cell["data"]
    again = await api.client.post(url, json={"action": "decline"}, headers=api.headers)
    assert again.status_code == 409


async def test_a_declined_question_is_the_servers_to_handle(api: OrchestratorApi) -> None:
    thread_id, run_id, message = await _asked(api)
    declined = await api.client.post(
        _input_url(thread_id, message), json={"action": "decline"}, headers=api.headers
    )
    assert declined.status_code == 200, declined.text
    assert (await api.wait_run(thread_id, run_id))["status"] == "completed"
    [done] = await api.tool_messages(thread_id)
    assert done["tool_activity"]["data"]["text"] == "not booked (decline)"


async def test_an_unanswered_question_expires_as_a_timeout(api: OrchestratorApi) -> None:
    thread_id, run_id, message = await _asked(api)
    run = await api.wait_run(thread_id, run_id, timeout=TTL_SECONDS + 10)
    assert run["status"] == "completed", run
    [done] = await api.tool_messages(thread_id)
    cell = done["tool_activity"]
    assert cell["status"] == "failure" and cell["error_type"] == "timeout"
    assert "answered" in cell["error"] and "input_request" not in (cell["data"] or {})
    late = await api.client.post(
        _input_url(thread_id, message), json={"action": "cancel"}, headers=api.headers
    )
    assert late.status_code == 409 and "expired" in late.json()["detail"], late.text
    # exactly one terminal write: the expiry's (the tool's own timeout writes nothing more)
    ended = [
        frame.message.tool_activity.status
        for _, frame in api.frames.frames
        if isinstance(frame, MessageFrame)
        and frame.message.id == UUID(message["id"])
        and frame.message.tool_activity is not None
        and frame.message.tool_activity.status in ("success", "failure")
    ]
    assert ended == ["failure"]


async def test_answers_are_checked(api: OrchestratorApi) -> None:
    thread_id, _, message = await _asked(api)
    url = _input_url(thread_id, message)
    bad = await api.client.post(url, json={"action": "maybe"}, headers=api.headers)
    assert bad.status_code == 400
    bare = await api.client.post(url, json={"action": "accept"}, headers=api.headers)
    assert bare.status_code == 400 and "content" in bare.json()["detail"]
    assert (await api.client.post(url, json={"action": "cancel"})).status_code == 401
    other_thread = await api.new_thread()
    elsewhere = await api.client.post(
        _input_url(other_thread, message), json={"action": "cancel"}, headers=api.headers
    )
    assert elsewhere.status_code == 404


async def test_cancelling_the_run_ends_a_waiting_question(api: OrchestratorApi) -> None:
    thread_id, run_id, message = await _asked(api)
    cancel = await api.client.post(
        f"/api/threads/{thread_id}/runs/{run_id}/cancel", headers=api.headers
    )
    assert cancel.status_code in (200, 202), cancel.text
    assert (await api.wait_run(thread_id, run_id))["status"] == "cancelled"
    [done] = await api.tool_messages(thread_id)
    assert done["tool_activity"]["status"] == "failure"
    assert done["tool_activity"]["error_type"] == "cancelled"
    late = await api.client.post(
        _input_url(thread_id, message), json={"action": "decline"}, headers=api.headers
    )
    assert late.status_code == 409
