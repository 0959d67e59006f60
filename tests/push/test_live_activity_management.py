"""Live Activities the app manages: list, end with a final state, unregister (each only
its owner's), one run's activity, and push-to-start."""

from __future__ import annotations

import asyncio
import secrets

from tests.conftest import make_api_user
from tests.orchestrator.support import OrchestratorApi
from tests.push.conftest import BUNDLE
from tests.push.test_live_activities import _register, _state
from tests.support.fake_apns import FakeApns
from tests.support.fake_llm import Call, Text, ToolCalls
from tests.support.test_tools import GateTool

FINAL = {"status": "completed", "toolName": "web", "cellsDone": 2, "cellsTotal": 2}


async def _listed(api: OrchestratorApi, headers: dict, **params: object) -> list[dict]:
    response = await api.client.get("/api/live-activities", params=params, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()["items"]


async def test_list_end_and_unregister_your_own_only(
    api: OrchestratorApi, fake_apns: FakeApns
) -> None:
    thread_id = await api.new_thread()
    first, second = secrets.token_hex(40), secrets.token_hex(40)
    ended = await _register(api, thread_id, first)
    dropped = await _register(api, thread_id, second)
    listed = await _listed(api, api.headers)
    assert [a["id"] for a in listed] == [dropped["id"], ended["id"]]  # newest first
    assert listed[0]["scope"] == "thread" and listed[0]["ended_at"] is None
    assert len(await _listed(api, api.headers, limit=1)) == 1
    stranger = await make_api_user(api.db)
    assert await _listed(api, stranger.headers, include_ended=True) == []
    end_url = f"/api/live-activities/{ended['id']}/end"
    body = {"content_state": FINAL}
    for response in (
        await api.client.post(end_url, json=body, headers=stranger.headers),
        await api.client.delete(f"/api/live-activities/{ended['id']}", headers=stranger.headers),
    ):
        assert response.status_code == 404, response.text
        assert response.headers["content-type"].startswith("application/problem+json")

    response = await api.client.post(end_url, json=body, headers=api.headers)
    assert response.status_code == 200, response.text
    assert response.json()["ended_at"] is not None
    await fake_apns.wait_for(lambda: fake_apns.to(first))
    (end,) = fake_apns.to(first)
    assert end.payload["aps"]["event"] == "end" and end.headers["apns-priority"] == "10"
    assert _state(end) | {} == _state(end) and _state(end)["cellsDone"] == 2
    assert _state(end)["status"] == "completed" and _state(end)["toolName"] == "web"
    assert end.payload["aps"]["dismissal-date"] > end.payload["aps"]["timestamp"]
    again = await api.client.post(end_url, json=body, headers=api.headers)
    assert again.status_code == 409
    assert [a["id"] for a in await _listed(api, api.headers)] == [dropped["id"]]
    assert len(await _listed(api, api.headers, include_ended=True)) == 2

    gone = await api.client.delete(f"/api/live-activities/{dropped['id']}", headers=api.headers)
    assert gone.status_code == 204
    api.llm.script(Text("nobody follows"))
    _, run = await api.turn("hello", thread_id)
    assert run["status"] == "completed"
    assert fake_apns.to(second) == [] and len(fake_apns.to(first)) == 1
    assert await _listed(api, api.headers) == []


async def test_an_end_with_a_bad_state_is_a_400(api: OrchestratorApi) -> None:
    thread_id = await api.new_thread()
    activity = await _register(api, thread_id, secrets.token_hex(40))
    url = f"/api/live-activities/{activity['id']}/end"
    for state in ({"status": "done"}, FINAL | {"extra": 1}, FINAL | {"cellsDone": -1}):
        response = await api.client.post(url, json={"content_state": state}, headers=api.headers)
        assert response.status_code == 400, (state, response.text)


async def test_an_activity_of_one_run(api: OrchestratorApi, fake_apns: FakeApns) -> None:
    GateTool.gate = asyncio.Event()
    api.llm.script(ToolCalls(Call("test_gate", {"action": "wait"})), Text("done"))
    thread_id = await api.new_thread()
    run_id = (await api.post(thread_id, "go")).json()["run"]["id"]
    await api.wait_activity("in_progress", "test_gate")
    url = f"/api/threads/{thread_id}/runs/{run_id}/live-activity"
    token = secrets.token_hex(40)
    stranger = await make_api_user(api.db)
    body = {"push_token": token}
    assert (await api.client.post(url, json=body, headers=stranger.headers)).status_code == 404
    response = await api.client.post(url, json=body, headers=api.headers)
    assert response.status_code == 201, response.text
    assert response.json()["scope"] == "run" and response.json()["run_id"] == run_id
    GateTool.gate.set()
    await api.wait_run(thread_id, run_id)
    await fake_apns.wait_for(
        lambda: any(p.payload["aps"]["event"] == "end" for p in fake_apns.to(token))
    )
    late = await api.client.post(
        url, json={"push_token": secrets.token_hex(40)}, headers=api.headers
    )
    assert late.status_code == 409


async def test_a_run_started_elsewhere_starts_a_live_activity_by_push(
    api: OrchestratorApi, fake_apns: FakeApns
) -> None:
    start_token = secrets.token_hex(40)
    response = await api.client.post(
        "/api/live-activities/push-to-start",
        json={"push_token": start_token, "environment": "sandbox"},
        headers=api.headers,
    )
    assert response.status_code == 201, response.text
    GateTool.gate = asyncio.Event()
    api.llm.script(ToolCalls(Call("test_gate", {"action": "wait"})), Text("done"))
    thread_id = await api.new_thread()
    run_id = (await api.post(thread_id, "from a shortcut")).json()["run"]["id"]
    await fake_apns.wait_for(lambda: fake_apns.to(start_token))
    start = fake_apns.to(start_token)[0]
    aps = start.payload["aps"]
    assert aps["event"] == "start" and aps["attributes-type"] == "RunActivityAttributes"
    assert aps["attributes"]["threadId"] == thread_id and aps["attributes"]["runId"] == run_id
    assert aps["alert"]["loc-key"] == "LIVE_ACTIVITY_START_BODY"
    assert start.headers["apns-topic"] == f"{BUNDLE}.push-type.liveactivity"
    assert start.headers["apns-push-type"] == "liveactivity" and not fake_apns.rejected
    # The phone started the activity: it registers the activity's own token for the run.
    token = secrets.token_hex(40)
    url = f"/api/threads/{thread_id}/runs/{run_id}/live-activity"
    registered = await api.client.post(url, json={"push_token": token}, headers=api.headers)
    assert registered.status_code == 201, registered.text
    GateTool.gate.set()
    await api.wait_run(thread_id, run_id)
    await fake_apns.wait_for(
        lambda: any(p.payload["aps"]["event"] == "end" for p in fake_apns.to(token))
    )
    assert len(fake_apns.to(start_token)) == 1  # started once


async def test_push_to_start_tokens_are_your_own(api: OrchestratorApi) -> None:
    url = "/api/live-activities/push-to-start"
    body = {"push_token": secrets.token_hex(40)}
    first = (await api.client.post(url, json=body, headers=api.headers)).json()
    again = (await api.client.post(url, json=body, headers=api.headers)).json()
    assert first["id"] == again["id"]  # idempotent by token
    stranger = await make_api_user(api.db)
    mine = f"{url}/{first['id']}"
    assert (await api.client.delete(mine, headers=stranger.headers)).status_code == 404
    assert (await api.client.delete(mine, headers=api.headers)).status_code == 204
    assert (await api.client.delete(mine, headers=api.headers)).status_code == 404
    bad = await api.client.post(url, json={"push_token": "zz"}, headers=api.headers)
    assert bad.status_code == 400
