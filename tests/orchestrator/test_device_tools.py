"""Device tools: the phone runs them. The cell waits as awaiting_device until the app posts
the result (checked against the tool's result schema); the first answer wins."""

from __future__ import annotations

import json

import pytest

from tests.conftest import make_api_user
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls

HERE = {"latitude": 52.52, "longitude": 13.405, "locality": "Berlin"}


@pytest.fixture
async def device_thread(api: OrchestratorApi) -> str:
    agent = await api.add_agent(name="Companion", agent_type="tester_device")
    return await api.new_thread(agent.id)


async def _waiting(
    api: OrchestratorApi, thread_id: str, call: Call, answer: str = "done"
) -> tuple[str, dict]:
    api.llm.script(ToolCalls(call), Text(answer))
    run_id = (await api.post(thread_id, "where am I?")).json()["run"]["id"]
    message = await api.wait_activity("awaiting_device", call.name)
    return run_id, message


def _result_url(thread_id: str, message: dict) -> str:
    return f"/api/threads/{thread_id}/messages/{message['id']}/result"


def _told(api: OrchestratorApi) -> dict:
    """What the model read as the device call's result (its second request's last message)."""
    return json.loads(api.llm.requests[1]["messages"][-1]["content"])


async def test_the_catalog_marks_device_tools(api: OrchestratorApi) -> None:
    response = await api.client.get("/api/tools", headers=api.headers)
    tools = {tool["name"]: tool for tool in response.json()["items"]}
    location = tools["device_location"]
    assert location["executor"] == "device"
    assert location["result_schema"]["required"] == ["latitude", "longitude"]
    assert location["parameters"]["properties"]["accuracy"]["enum"] == ["coarse", "precise"]
    assert "companion" in location["agent_types"]
    assert tools["tasks"]["executor"] == "server"


async def test_the_phone_answers_and_the_run_goes_on(
    api: OrchestratorApi, device_thread: str
) -> None:
    run_id, message = await _waiting(
        api, device_thread, Call("device_location", {"accuracy": "coarse"}), "You are in Berlin."
    )
    activity = message["tool_activity"]
    assert activity["input"] == {"accuracy": "coarse"} and activity["expires_at"]
    assert api.llm.requests[0]["tools"][1]["function"]["name"] == "device_location"
    assert (await api.get_run(device_thread, run_id))["status"] == "running"

    url = _result_url(device_thread, message)
    answered = await api.client.post(url, json={"output": HERE}, headers=api.headers)
    assert answered.status_code == 200, answered.text
    assert answered.json()["tool_activity"]["status"] == "success"
    assert answered.json()["tool_activity"]["data"] == {
        "type": "device_result",
        "tool": "device_location",
        "result": HERE,
    }
    assert answered.json()["tool_activity"]["display_message"] == "Done"  # none sent
    again = await api.client.post(url, json={"output": HERE}, headers=api.headers)
    assert again.status_code == 409

    run = await api.wait_run(device_thread, run_id)
    assert run["status"] == "completed"
    assert _told(api) == {"ok": True, **HERE}
    texts = [m["content"] for m in await api.messages(device_thread) if m["role"] == "assistant"]
    assert "You are in Berlin." in texts


async def test_an_output_off_the_result_schema_is_refused_and_the_call_keeps_waiting(
    api: OrchestratorApi, device_thread: str
) -> None:
    run_id, message = await _waiting(api, device_thread, Call("device_location", {}))
    url = _result_url(device_thread, message)
    wrong = await api.client.post(url, json={"output": {"latitude": 200}}, headers=api.headers)
    assert wrong.status_code == 400, wrong.text
    fields = {error["field"]: error["message"] for error in wrong.json()["errors"]}
    assert set(fields) == {"$", "latitude"}  # longitude missing; latitude out of range
    assert "longitude" in fields["$"]
    waiting = (await api.tool_messages(device_thread))[0]["tool_activity"]
    assert waiting["status"] == "awaiting_device"

    said = "Found you near Berlin"
    right = await api.client.post(
        url, json={"output": HERE, "display_message": said}, headers=api.headers
    )
    assert right.status_code == 200
    assert right.json()["tool_activity"]["display_message"] == said
    assert (await api.wait_run(device_thread, run_id))["status"] == "completed"


async def test_the_phone_reports_an_error_and_the_model_is_told(
    api: OrchestratorApi, device_thread: str
) -> None:
    run_id, message = await _waiting(api, device_thread, Call("device_location", {}))
    url = _result_url(device_thread, message)
    for body in ({}, {"output": HERE, "error": "both"}):
        refused = await api.client.post(url, json=body, headers=api.headers)
        assert refused.status_code == 400, body
    bad_type = await api.client.post(
        url, json={"error": "x", "error_type": "oops"}, headers=api.headers
    )
    assert bad_type.status_code == 400
    denied = await api.client.post(
        url,
        json={"error": "Location access is off.", "error_type": "permission_error"},
        headers=api.headers,
    )
    assert denied.status_code == 200
    activity = denied.json()["tool_activity"]
    assert activity["status"] == "failure" and activity["error_type"] == "permission_error"
    assert (await api.wait_run(device_thread, run_id))["status"] == "completed"
    told = _told(api)
    assert told["ok"] is False and told["error"] == "device_location(): Location access is off."


async def test_arguments_off_the_parameters_schema_fail_without_waiting(
    api: OrchestratorApi, device_thread: str
) -> None:
    api.llm.script(ToolCalls(Call("device_location", {"accuracy": "exact"})), Text("sorry"))
    _, run = await api.turn("where am I?", device_thread)
    assert run["status"] == "completed"
    activity = (await api.tool_messages(device_thread))[0]["tool_activity"]
    assert activity["status"] == "failure" and activity["error_type"] == "validation_error"
    told = _told(api)
    assert told["errors"][0]["field"] == "accuracy"
    assert "parameters" in told  # the schema, so the model can correct itself


async def test_only_the_owner_answers_and_only_a_device_call(
    api: OrchestratorApi, device_thread: str
) -> None:
    run_id, message = await _waiting(api, device_thread, Call("device_location", {}))
    stranger = await make_api_user(api.db)
    foreign = await api.client.post(
        _result_url(device_thread, message), json={"output": HERE}, headers=stranger.headers
    )
    assert foreign.status_code == 404
    user_message = (await api.messages(device_thread))[0]
    plain = await api.client.post(
        _result_url(device_thread, user_message), json={"output": HERE}, headers=api.headers
    )
    assert plain.status_code == 409
    approval = await api.client.post(
        f"/api/threads/{device_thread}/messages/{message['id']}/approval",
        json={"approve": True},
        headers=api.headers,
    )
    assert approval.status_code == 409
    cancel = await api.client.post(
        f"/api/threads/{device_thread}/runs/{run_id}/cancel", headers=api.headers
    )
    assert cancel.status_code in (200, 202), cancel.text
    run = await api.wait_run(device_thread, run_id)
    assert run["status"] == "cancelled"
    activity = (await api.tool_messages(device_thread))[0]["tool_activity"]
    assert activity["status"] == "failure"  # closed with the run: no cell left waiting
    late = await api.client.post(
        _result_url(device_thread, message), json={"output": HERE}, headers=api.headers
    )
    assert late.status_code == 409


async def test_an_unanswered_call_times_out_and_the_model_is_told(
    api: OrchestratorApi, device_thread: str
) -> None:
    run_id, message = await _waiting(api, device_thread, Call("test_quick_device", {}))
    run = await api.wait_run(device_thread, run_id, timeout=8)
    assert run["status"] == "completed"
    activity = (await api.tool_messages(device_thread))[0]["tool_activity"]
    assert activity["status"] == "failure" and activity["error_type"] == "timeout"
    assert _told(api)["error_type"] == "timeout"
    late = await api.client.post(
        _result_url(device_thread, message), json={"output": {}}, headers=api.headers
    )
    assert late.status_code == 409
