"""A run waiting for the phone holds no runner slot: other runs go on meanwhile."""

from __future__ import annotations

import pytest

from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls


@pytest.fixture(scope="module")
def settings_overrides() -> dict:
    return {"runner_max_concurrent_runs": 1}


async def test_other_runs_run_while_one_waits_for_the_device(api: OrchestratorApi) -> None:
    companion = await api.add_agent(name="Companion", agent_type="tester_device")
    waiting_thread = await api.new_thread(companion.id)
    api.llm.script(ToolCalls(Call("device_location", {})), Text("found you"))
    waiting_run = (await api.post(waiting_thread, "where am I?")).json()["run"]["id"]
    message = await api.wait_activity("awaiting_device")

    api.llm.script(Text("hello meanwhile"))
    _, other = await api.turn("hi")  # with the only slot held, this would wait 10 minutes
    assert other["status"] == "completed"

    answered = await api.client.post(
        f"/api/threads/{waiting_thread}/messages/{message['id']}/result",
        json={"output": {"latitude": 1.5, "longitude": 2.5}},
        headers=api.headers,
    )
    assert answered.status_code == 200
    assert (await api.wait_run(waiting_thread, waiting_run))["status"] == "completed"
