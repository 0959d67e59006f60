"""Live Activities: updates while the run goes, an `end` with the final state however it ends."""

from __future__ import annotations

import asyncio
import secrets

from app.push.live_activities import _same
from tests.orchestrator.support import OrchestratorApi
from tests.push.conftest import BUNDLE
from tests.support.fake_apns import FakeApns, Received
from tests.support.fake_llm import Call, Text, ToolCalls
from tests.support.test_tools import GateTool


async def _register(api: OrchestratorApi, thread_id: str, token: str) -> dict:
    response = await api.client.post(
        f"/api/threads/{thread_id}/live-activity",
        json={"push_token": token, "environment": "sandbox"},
        headers=api.headers,
    )
    assert response.status_code == 201, response.text
    return response.json()


def _state(push: Received) -> dict:
    return push.payload["aps"]["content-state"]


async def test_updates_while_the_run_goes_then_the_end(
    api: OrchestratorApi, fake_apns: FakeApns
) -> None:
    token = secrets.token_hex(40)
    thread_id = await api.new_thread()
    registered = await _register(api, thread_id, token)
    assert registered["run_id"] is None  # no run yet: it follows the next one
    GateTool.gate = asyncio.Event()
    api.llm.script(ToolCalls(Call("test_gate", {"action": "wait"})), Text("All done."))
    run_id = (await api.post(thread_id, "go")).json()["run"]["id"]
    await fake_apns.wait_for(
        lambda: any(_state(p).get("toolName") == "test_gate" for p in fake_apns.to(token))
    )
    update = next(p for p in fake_apns.to(token) if _state(p).get("toolName") == "test_gate")
    assert update.headers["apns-push-type"] == "liveactivity"
    assert update.headers["apns-topic"] == f"{BUNDLE}.push-type.liveactivity"
    assert update.payload["aps"]["event"] == "update"
    assert _state(update)["status"] == "running" and _state(update)["toolStatus"] == "in_progress"
    assert _state(update)["cellsDone"] == 0 and _state(update)["cellsTotal"] == 1
    GateTool.gate.set()
    await api.wait_run(thread_id, run_id)
    await fake_apns.wait_for(
        lambda: any(p.payload["aps"]["event"] == "end" for p in fake_apns.to(token))
    )
    pushes = fake_apns.to(token)
    end = pushes[-1]
    assert end.payload["aps"]["event"] == "end" and not fake_apns.rejected
    assert all(p.payload["aps"]["event"] == "update" for p in pushes[:-1])
    final = _state(end)
    assert final["status"] == "completed" and final["cellsDone"] == 1 == final["cellsTotal"]
    assert final["elapsedSeconds"] >= 0
    assert end.payload["aps"]["dismissal-date"] > end.payload["aps"]["timestamp"]
    assert end.headers["apns-priority"] == "10"


async def test_a_cancelled_run_ends_its_live_activity(
    api: OrchestratorApi, fake_apns: FakeApns
) -> None:
    token = secrets.token_hex(40)
    GateTool.gate = asyncio.Event()
    api.llm.script(ToolCalls(Call("test_gate", {"action": "wait"})), Text("never"))
    thread_id = await api.new_thread()
    run_id = (await api.post(thread_id, "go")).json()["run"]["id"]
    await api.wait_activity("in_progress", "test_gate")
    assert (await _register(api, thread_id, token))["run_id"] == run_id  # the current run
    cancel = await api.client.post(
        f"/api/threads/{thread_id}/runs/{run_id}/cancel", headers=api.headers
    )
    assert cancel.status_code == 200
    await api.wait_run(thread_id, run_id)
    await fake_apns.wait_for(
        lambda: any(p.payload["aps"]["event"] == "end" for p in fake_apns.to(token))
    )
    end = fake_apns.to(token)[-1]
    assert _state(end)["status"] == "cancelled"
    GateTool.gate.set()


async def test_register_on_someone_elses_thread_or_with_a_bad_token(
    api: OrchestratorApi,
) -> None:
    from tests.conftest import make_api_user

    thread_id = await api.new_thread()
    stranger = await make_api_user(api.db)
    url = f"/api/threads/{thread_id}/live-activity"
    body = {"push_token": secrets.token_hex(40)}
    assert (await api.client.post(url, json=body, headers=stranger.headers)).status_code == 404
    bad = await api.client.post(url, json={"push_token": "zz"}, headers=api.headers)
    assert bad.status_code == 400


def test_elapsed_time_alone_is_no_update() -> None:
    state = {"status": "running", "toolName": "t", "cellsDone": 0, "elapsedSeconds": 3}
    assert _same(state, state | {"elapsedSeconds": 9})
    assert not _same(state, state | {"cellsDone": 1})
