"""An agent type (or one of its tools) says how long its approvals wait: seconds, days, or
until answered (no expiry; the run is parked, not failed)."""

from __future__ import annotations

from datetime import datetime, timedelta

from app.lib.time import utcnow
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls


async def _waiting(api: OrchestratorApi, agent_type: str) -> tuple[str, str, dict]:
    agent = await api.add_agent(name=agent_type, agent_type=agent_type)
    thread_id = await api.new_thread(agent.id)
    api.llm.script(ToolCalls(Call("test_confirm", {"action": "do", "note": "n"})), Text("ok"))
    run_id = (await api.post(thread_id, "do it")).json()["run"]["id"]
    message = await api.wait_activity("awaiting_approval", "test_confirm")
    return thread_id, run_id, message


async def test_an_approval_that_waits_until_answered_has_no_expiry(
    api: OrchestratorApi,
) -> None:
    thread_id, run_id, message = await _waiting(api, "tester_parked")
    assert message["tool_activity"]["expires_at"] is None
    assert (await api.get_run(thread_id, run_id))["status"] == "running"
    approved = await api.decide(thread_id, message["id"], True)
    assert approved.status_code == 200, approved.text
    assert (await api.wait_run(thread_id, run_id))["status"] == "completed"


async def test_a_tool_of_the_agent_type_waits_its_own_time(api: OrchestratorApi) -> None:
    thread_id, run_id, message = await _waiting(api, "tester_days")
    expires = datetime.fromisoformat(message["tool_activity"]["expires_at"].replace("Z", "+00:00"))
    assert utcnow() + timedelta(days=2) - timedelta(minutes=5) < expires
    assert expires <= utcnow() + timedelta(days=2)
    denied = await api.decide(thread_id, message["id"], False)
    assert denied.status_code == 200, denied.text
    await api.wait_run(thread_id, run_id)
