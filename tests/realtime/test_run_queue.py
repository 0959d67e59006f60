"""A process whose runner slots are all taken tells the phone: a `run` frame `queued` with
its `position`, again as it moves, fairly across users; `/metrics` shows the limits.

A real server (uvicorn, runner on, one slot) whose model is the fake OpenAI server; the
run holding the slot waits in the `test_slow` tool (tests/support/test_tools.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

import app.orchestrator.worker  # noqa: F401  (imports litellm now, not in the server's startup)
from app.tools.runtime.toolsets import load_agent_types
from tests.conftest import ApiUser
from tests.realtime.conftest import ServerFactory, new_thread
from tests.realtime.support import Server, WsClient
from tests.support.fake_llm import Call, FakeLLM, ToolCalls
from tests.support.test_tools import register_test_tools, write_agent_types

SLOW = ToolCalls(Call("test_slow", {"action": "wait", "seconds": 60}))


@pytest.fixture
async def fake() -> AsyncIterator[FakeLLM]:
    async with FakeLLM() as server:
        yield server


@pytest.fixture
async def testers(alice: ApiUser, bob: ApiUser, db: AsyncSession) -> tuple[ApiUser, ApiUser]:
    alice.agent.agent_type = bob.agent.agent_type = "tester"
    await db.commit()
    return alice, bob


@asynccontextmanager
async def one_slot(
    start_server: ServerFactory, fake: FakeLLM, tmp_path: Path
) -> AsyncIterator[tuple[Server, httpx.AsyncClient]]:
    register_test_tools()
    settings: dict[str, Any] = dict(
        runner_enabled=True,
        runner_max_concurrent_runs=1,
        runner_poll_seconds=0.2,
        llm_model="openai/fake-model",
        llm_api_base=fake.base_url,
        llm_api_key="test-key",
        agent_types_file=str(write_agent_types(tmp_path)),
    )
    try:
        async with (
            start_server(**settings) as server,
            httpx.AsyncClient(base_url=server.http) as http,
        ):
            yield server, http
    finally:
        load_agent_types(None)  # the default agent types for the other modules


async def post(http: httpx.AsyncClient, user: ApiUser, thread_id: str) -> str:
    response = await http.post(
        f"/api/threads/{thread_id}/messages", json={"content": "go"}, headers=user.headers
    )
    assert response.status_code == 202, response.text
    return response.json()["run"]["id"]


async def watched(ws: WsClient, http: httpx.AsyncClient, user: ApiUser) -> str:
    """A new thread of `user`'s, subscribed on `ws`."""
    thread_id = await new_thread(http, user)
    await ws.subscribe(thread_id)
    await ws.wait_type("subscribed", thread_id=thread_id)
    return thread_id


def told(run_id: str, **fields: Any) -> Any:
    def match(frame: dict[str, Any]) -> bool:
        if frame["type"] != "run" or frame["run"]["id"] != run_id:
            return False
        return all(frame.get(k, frame["run"].get(k)) == v for k, v in fields.items())

    return match


async def cancel(http: httpx.AsyncClient, user: ApiUser, thread_id: str, run_id: str) -> None:
    response = await http.post(
        f"/api/threads/{thread_id}/runs/{run_id}/cancel", headers=user.headers
    )
    assert response.status_code == 200, response.text


async def test_a_full_process_tells_queued_runs_their_fair_place(
    start_server: ServerFactory,
    fake: FakeLLM,
    tmp_path: Path,
    testers: tuple[ApiUser, ApiUser],
) -> None:
    alice, bob = testers
    fake.script(SLOW, SLOW)
    async with (
        one_slot(start_server, fake, tmp_path) as (server, http),
        WsClient.connect(server.ws, alice.token) as alice_ws,
        WsClient.connect(server.ws, bob.token) as bob_ws,
    ):
        holding_thread = await watched(alice_ws, http, alice)
        holding = await post(http, alice, holding_thread)
        await alice_ws.wait_for(told(holding, status="running"), within=30)

        # every slot taken: alice's next run is told it is next in line
        second_thread = await watched(alice_ws, http, alice)
        second = await post(http, alice, second_thread)
        queued = await alice_ws.wait_for(told(second, position=1))
        assert queued["run"]["status"] == "queued"
        third_thread = await new_thread(http, alice)
        third = await post(http, alice, third_thread)

        # bob, with nothing running, goes before alice's waiting runs: both are told
        bobs_thread = await watched(bob_ws, http, bob)
        bobs = await post(http, bob, bobs_thread)
        assert (await bob_ws.wait_for(told(bobs, position=1)))["run"]["status"] == "queued"
        await alice_ws.wait_for(told(second, position=2))

        scrape = (await http.get("/metrics")).text
        assert "toolcells_runner_slots_in_use 1.0" in scrape
        assert "toolcells_runner_slots_limit 1.0" in scrape
        assert "toolcells_runs_waiting 3.0" in scrape
        assert 'toolcells_model_door_connection_limit{provider="openai"} 1000.0' in scrape
        assert 'toolcells_db_pool_checked_out{pool="app"}' in scrape
        assert "toolcells_ws_send_queue_limit 512.0" in scrape
        assert "toolcells_loop_lag_limit_seconds 0.05" in scrape  # RUNNER_BUSY_LAG_SECONDS
        assert "toolcells_loop_lag_seconds " in scrape

        # the slot frees: bob's run takes it, alice's wait on
        await cancel(http, alice, holding_thread, holding)
        await bob_ws.wait_for(told(bobs, status="running"), within=30)
        run = await http.get(f"/api/threads/{second_thread}/runs/{second}", headers=alice.headers)
        assert run.json()["status"] == "queued"
        assert not any(told(second, position=None, status="running")(f) for f in alice_ws.frames)

        for user, thread_id, run_id in (
            (bob, bobs_thread, bobs),
            (alice, second_thread, second),
            (alice, third_thread, third),
        ):
            await cancel(http, user, thread_id, run_id)
