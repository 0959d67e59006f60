"""Tool calls that need confirmation: approve, deny, the first decision wins."""

from __future__ import annotations

import json

from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls
from tests.support.test_tools import ConfirmTool


async def _awaiting(api: OrchestratorApi, note: str) -> tuple[str, str, dict]:
    api.llm.script(ToolCalls(Call("test_confirm", {"action": "do", "note": note})), Text("ok"))
    thread_id = await api.new_thread()
    run_id = (await api.post(thread_id, "do it")).json()["run"]["id"]
    message = await api.wait_activity("awaiting_approval", "test_confirm")
    assert message["tool_activity"]["expires_at"]
    return thread_id, run_id, message


def _approval_url(thread_id: str, message: dict) -> str:
    return f"/api/threads/{thread_id}/messages/{message['id']}/approval"


async def test_approved_call_runs_and_a_second_decision_is_refused(api: OrchestratorApi) -> None:
    ConfirmTool.done.clear()
    thread_id, run_id, message = await _awaiting(api, "approve me")
    url = _approval_url(thread_id, message)
    # a JSON boolean only: `1` is refused naming the field, and decides nothing
    coerced = await api.client.post(url, json={"approve": 1}, headers=api.headers)
    assert coerced.status_code == 400, coerced.text
    assert [e["field"] for e in coerced.json()["errors"]] == ["approve"]
    response = await api.client.post(url, json={"approve": True}, headers=api.headers)
    assert response.status_code == 200, response.text
    assert response.json()["tool_activity"]["status"] == "in_progress"
    late = await api.client.post(url, json={"approve": False}, headers=api.headers)
    assert late.status_code == 409 and "already decided" in late.json()["detail"]
    run = await api.wait_run(thread_id, run_id)
    assert run["status"] == "completed"
    activity = (await api.tool_messages(thread_id))[0]["tool_activity"]
    assert activity["status"] == "success" and activity["expires_at"] is None
    assert ConfirmTool.done == ["approve me"]
    again = await api.client.post(url, json={"approve": True}, headers=api.headers)
    assert again.status_code == 409


async def test_denied_call_fails_with_permission_error_and_the_model_is_told(
    api: OrchestratorApi,
) -> None:
    ConfirmTool.done.clear()
    thread_id, run_id, message = await _awaiting(api, "deny me")
    response = await api.client.post(
        _approval_url(thread_id, message),
        json={"approve": False, "reason": "not now"},
        headers=api.headers,
    )
    assert response.status_code == 200
    run = await api.wait_run(thread_id, run_id)
    assert run["status"] == "completed"
    activity = (await api.tool_messages(thread_id))[0]["tool_activity"]
    assert activity["status"] == "failure" and activity["error_type"] == "permission_error"
    assert ConfirmTool.done == []
    told = json.loads(api.llm.requests[1]["messages"][-1]["content"])
    assert told["error_type"] == "permission_error" and "not now" in told["error"]


async def test_approval_of_someone_elses_or_a_plain_message(api: OrchestratorApi) -> None:
    thread_id, run_id, message = await _awaiting(api, "x")
    user_message = (await api.messages(thread_id))[0]
    plain = await api.client.post(
        _approval_url(thread_id, user_message), json={"approve": True}, headers=api.headers
    )
    assert plain.status_code == 409
    from tests.conftest import make_api_user

    stranger = await make_api_user(api.db)
    foreign = await api.client.post(
        _approval_url(thread_id, message), json={"approve": True}, headers=stranger.headers
    )
    assert foreign.status_code == 404
    await api.client.post(
        _approval_url(thread_id, message), json={"approve": True}, headers=api.headers
    )
    assert (await api.wait_run(thread_id, run_id))["status"] == "completed"
