"""An approval nobody decides expires: failure, timeout (never a denial); a late decision
is 409."""

from __future__ import annotations

import json

import pytest

from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls


@pytest.fixture(scope="module")
def settings_overrides() -> dict:
    return {"approval_ttl_seconds": 0.5}


async def test_unanswered_approval_expires(api: OrchestratorApi) -> None:
    api.llm.script(ToolCalls(Call("test_confirm", {"action": "do", "note": "late"})), Text("ok"))
    thread_id = await api.new_thread()
    run_id = (await api.post(thread_id, "do it")).json()["run"]["id"]
    message = await api.wait_activity("awaiting_approval")
    run = await api.wait_run(thread_id, run_id, timeout=5)
    assert run["status"] == "completed"
    activity = (await api.tool_messages(thread_id))[0]["tool_activity"]
    assert activity["status"] == "failure" and activity["error_type"] == "timeout"
    assert activity["error"] == "No one decided in time."
    told = json.loads((await api.tool_messages(thread_id))[0]["content"])
    assert told == {
        "type": "error",
        "ok": False,
        "error": 'test_confirm(action=do, note="late"): No one decided in time.',
        "error_type": "timeout",
    }
    late = await api.decide(thread_id, message["id"], True)
    assert late.status_code == 409
    assert late.json()["detail"] == "The approval request has expired.", late.text  # not "decided"
