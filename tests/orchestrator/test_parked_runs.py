"""A run parked on an approval that waits until answered outlives its server process.

Server A runs the turn until its call awaits approval. Then A stops: a deploy (SIGTERM,
A parks the run itself) or a crash (SIGKILL, B's reaper finds A silent and parks it).
The run is back in the queue, its cell still waiting; B, another process on the same
database, takes it up, and the user's approval given to B runs the call and completes
the turn, the model's next turn reading the call's result. A parked run cancelled while
no process holds it ends its waiting cell, and a late answer is told the call ended.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from tests.conftest import ApiUser, make_api_user
from tests.support.fake_llm import Call, FakeLLM, Text, ToolCalls
from tests.support.processes import free_port, server_env, start_server, until, wait_ready

FIRST_TURN = {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}
SECOND_TURN = {"prompt_tokens": 20, "completion_tokens": 3, "total_tokens": 23}


async def _parked_user(db: AsyncSession, fake_llm: FakeLLM) -> ApiUser:
    fake_llm.reset()
    fake_llm.script(
        ToolCalls(Call("test_confirm", {"action": "do", "note": "keep"}), usage=FIRST_TURN),
        Text("Done, as approved.", usage=SECOND_TURN),
    )
    user = await make_api_user(db)
    user.agent.agent_type = "tester_parked"  # approvals wait until answered
    await db.commit()
    return user


class Thread:
    def __init__(self, http: httpx.AsyncClient, thread_id: str, run_id: str) -> None:
        self.messages_url = f"/api/threads/{thread_id}/messages"
        self.run_url = f"/api/threads/{thread_id}/runs/{run_id}"

    async def cells(self, http: httpx.AsyncClient) -> list[dict[str, Any]]:
        items = (await http.get(self.messages_url)).json()["items"]
        return [m for m in items if m.get("tool_activity")]

    async def run(self, http: httpx.AsyncClient) -> dict[str, Any]:
        return (await http.get(self.run_url)).json()

    async def decide(self, http: httpx.AsyncClient, message_id: str) -> httpx.Response:
        url = f"{self.messages_url}/{message_id}/approval"
        return await http.post(url, json={"approve": True})


async def _until_waiting(http: httpx.AsyncClient, agent_id: Any) -> tuple[Thread, dict[str, Any]]:
    created = (await http.post("/api/threads", json={"agent_id": str(agent_id)})).json()
    url = f"/api/threads/{created['id']}/messages"
    posted = (await http.post(url, json={"content": "do it"})).json()
    thread = Thread(http, created["id"], posted["run"]["id"])

    async def waiting() -> dict[str, Any] | None:
        cells = await thread.cells(http)
        return next((m for m in cells if m["tool_activity"]["status"] == "awaiting_approval"), None)

    return thread, await until(waiting, timeout=60)


def _stop(server: subprocess.Popen[bytes], how: signal.Signals) -> None:
    server.send_signal(how)
    server.wait(timeout=30)


def _client(port: int, user: ApiUser) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers=user.headers)


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["deploy", "crash"])
async def test_a_parked_run_is_answered_on_another_process_and_completes(
    how: signal.Signals,
    database_url: str,
    db: AsyncSession,
    fake_llm: FakeLLM,
    agent_types_file: Path,
) -> None:
    user = await _parked_user(db, fake_llm)
    env = server_env(database_url, fake_llm, agent_types_file, RUN_LEASE_SECONDS="30")
    port_a, port_b = free_port(), free_port()
    a = start_server(port_a, env)
    b: subprocess.Popen[bytes] | None = None
    try:
        async with _client(port_a, user) as http_a, _client(port_b, user) as http_b:
            await wait_ready(http_a)
            thread, waiting = await _until_waiting(http_a, user.agent.id)
            _stop(a, how)
            b = start_server(port_b, env)  # a deploy's new process, or a surviving peer
            await wait_ready(http_b)

            async def taken_up() -> bool:  # by B: running again (after a crash, once
                return (await thread.run(http_b))["status"] == "running"  # B reaped A)

            await until(taken_up, timeout=30)
            [cell] = await thread.cells(http_b)
            assert cell["tool_activity"]["status"] == "awaiting_approval"  # still waiting

            approved = await thread.decide(http_b, waiting["id"])
            assert approved.status_code == 200, approved.text

            async def ended() -> dict[str, Any] | None:
                run = await thread.run(http_b)
                return run if run["status"] not in ("queued", "running") else None

            run = await until(ended, timeout=30)
            assert run["status"] == "completed", run
            # Usage is written when a run parks or ends: a deploy keeps the first turn's,
            # a crash loses it (docs/api.md says so); the second turn's is always there.
            first = how == signal.SIGTERM
            assert run["usage"]["input_tokens"] == 20 + 11 * first
            assert run["usage"]["output_tokens"] == 3 + 5 * first
            [cell] = await thread.cells(http_b)
            assert cell["tool_activity"]["status"] == "success"
            items = (await http_b.get(thread.messages_url)).json()["items"]
            assert items[-1]["role"] == "assistant"
            assert items[-1]["content"] == "Done, as approved."
            [_, second] = fake_llm.requests  # the model read the approved call's result
            tool_reads = [m for m in second["messages"] if m["role"] == "tool"]
            assert len(tool_reads) == 1 and "keep" in tool_reads[0]["content"]
    finally:
        for server in (a, b):
            if server is not None and server.poll() is None:
                server.kill()
                server.wait(timeout=10)


async def test_a_parked_run_cancelled_while_queued_ends_its_waiting_cell(
    database_url: str,
    db: AsyncSession,
    fake_llm: FakeLLM,
    agent_types_file: Path,
    client: httpx.AsyncClient,
) -> None:
    user = await _parked_user(db, fake_llm)
    port_a = free_port()
    a = start_server(port_a, server_env(database_url, fake_llm, agent_types_file))
    try:
        async with _client(port_a, user) as http_a:
            await wait_ready(http_a)
            thread, waiting = await _until_waiting(http_a, user.agent.id)
            _stop(a, signal.SIGTERM)
    finally:
        if a.poll() is None:
            a.kill()
            a.wait(timeout=10)
    # No process holds the run now; this test's own app (no runner) is the API.
    client.headers.update(user.headers)
    assert (await thread.run(client))["status"] == "queued"

    cancelled = await client.post(f"{thread.run_url}/cancel")
    assert cancelled.status_code in (200, 202), cancelled.text
    assert (await thread.run(client))["status"] == "cancelled"
    [cell] = await thread.cells(client)
    activity = cell["tool_activity"]
    assert activity["status"] == "failure" and activity["error_type"] == "cancelled"

    late = await thread.decide(client, waiting["id"])
    assert late.status_code == 409
    assert "already ended" in late.json()["detail"]
