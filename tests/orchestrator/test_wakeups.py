"""Two server processes with runners on wake each other at once: a run queued on one is
claimed by the other, a cancel or an approval decided on one takes effect in the run the
other executes.

The runners poll every 120 s and renew leases every 100 s here, so a wake-up is the only way
the other process can learn of these within the test's waits (a few seconds). Both
transports: the Redis control channel (REDIS_URL set), and PostgreSQL LISTEN/NOTIFY
without Redis.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Run
from tests.conftest import ApiUser, make_api_user
from tests.support.fake_llm import Call, FakeLLM, Text, ToolCalls
from tests.support.processes import (
    free_port,
    run_ended,
    server_env,
    start_server,
    until,
    wait_ready,
)

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
HOST = "127.0.0.1"
WITHIN = 10.0  # well below the poll and lease renewal


@pytest.fixture(params=["redis", "postgres_notify"])
def transport(request: pytest.FixtureRequest, dialect: str) -> dict[str, str]:
    if request.param == "postgres_notify" and dialect != "postgresql":
        pytest.skip("LISTEN/NOTIFY is PostgreSQL's")
    prefix = f"test-{uuid.uuid4().hex[:10]}:"
    if request.param == "redis":
        return {"REDIS_URL": REDIS_URL, "CHANNELS_PREFIX": prefix}
    return {"REDIS_URL": "", "CHANNELS_PREFIX": prefix}


@pytest.fixture
async def tester(db: AsyncSession, client: httpx.AsyncClient) -> ApiUser:
    user = await make_api_user(db)
    user.agent.agent_type = "tester"
    await db.commit()
    return user


@asynccontextmanager
async def two_runners(
    env: dict[str, str], user: ApiUser, max_runs: tuple[int, int]
) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    """Server processes A and B (each running at most `max_runs` runs); clients of each."""
    ports = free_port(), free_port()
    processes = [
        start_server(port, {**env, "RUNNER_MAX_CONCURRENT_RUNS": str(limit)})
        for port, limit in zip(ports, max_runs, strict=True)
    ]
    # Two processes writing one SQLite file on a loaded machine answer slowly at times.
    options: dict[str, Any] = {"headers": user.headers, "timeout": 60}
    try:
        async with (
            httpx.AsyncClient(base_url=f"http://{HOST}:{ports[0]}", **options) as a,
            httpx.AsyncClient(base_url=f"http://{HOST}:{ports[1]}", **options) as b,
        ):
            await wait_ready(a)
            await wait_ready(b)
            yield a, b
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=30)


def slow_env(database_url: str, fake_llm: FakeLLM, agent_types_file: Path, **extra: str) -> dict:
    return server_env(
        database_url,
        fake_llm,
        agent_types_file,
        RUNNER_POLL_SECONDS="120",
        RUN_LEASE_SECONDS="300",
        # A loaded machine must not make one process take the other for dead.
        RUNNER_HEARTBEAT_TIMEOUT_SECONDS="120",
        **extra,
    )


async def post(http: httpx.AsyncClient, user: ApiUser) -> tuple[str, str]:
    """A message to a new thread: (messages url, run url)."""
    thread = (await http.post("/api/threads", json={"agent_id": str(user.agent.id)})).json()
    messages_url = f"/api/threads/{thread['id']}/messages"
    posted = (await http.post(messages_url, json={"content": "go"})).json()
    return messages_url, f"/api/threads/{thread['id']}/runs/{posted['run']['id']}"


async def cell_with(http: httpx.AsyncClient, messages_url: str, status: str) -> dict[str, Any]:
    async def found() -> dict[str, Any] | None:
        items = (await http.get(messages_url)).json()["items"]
        return next(
            (m for m in items if (m.get("tool_activity") or {}).get("status") == status), None
        )

    return await until(found, timeout=60)


async def test_runs_queued_on_one_process_spread_over_both(
    database_url: str,
    db: AsyncSession,
    fake_llm: FakeLLM,
    agent_types_file: Path,
    tester: ApiUser,
    transport: dict[str, str],
) -> None:
    fake_llm.reset()
    fake_llm.respond_with(
        lambda body: (
            Text("done")
            if body["messages"][-1]["role"] == "tool"
            else ToolCalls(Call("test_slow", {"action": "wait", "seconds": 8}))
        )
    )
    env = slow_env(database_url, fake_llm, agent_types_file, **transport)
    async with two_runners(env, tester, max_runs=(2, 2)) as (a, _):
        # A takes two and is full for 8 s; only a wake-up lets B take the others meanwhile.
        run_urls = [(await post(a, tester))[1] for _ in range(4)]
        for run_url in run_urls:
            assert (await run_ended(a, run_url, timeout=WITHIN * 4))["status"] == "completed"
    owners = set(await db.scalars(select(Run.lease_owner).where(Run.thread_id.isnot(None))))
    assert len(owners) == 2, owners


async def test_a_cancel_asked_on_one_process_stops_the_run_on_the_other(
    database_url: str,
    fake_llm: FakeLLM,
    agent_types_file: Path,
    tester: ApiUser,
    transport: dict[str, str],
) -> None:
    fake_llm.reset()
    fake_llm.script(ToolCalls(Call("test_slow", {"action": "wait", "seconds": 120})), Text("no"))
    env = slow_env(database_url, fake_llm, agent_types_file, **transport)
    async with two_runners(env, tester, max_runs=(16, 0)) as (a, b):  # A runs it
        messages_url, run_url = await post(a, tester)
        await cell_with(a, messages_url, "in_progress")
        cancelled = await b.post(f"{run_url}/cancel")
        assert cancelled.status_code in (200, 202), cancelled.text
        assert (await run_ended(a, run_url, timeout=WITHIN))["status"] == "cancelled"


async def test_an_approval_decided_on_one_process_resumes_the_run_on_the_other(
    database_url: str,
    fake_llm: FakeLLM,
    agent_types_file: Path,
    tester: ApiUser,
    transport: dict[str, str],
) -> None:
    fake_llm.reset()
    fake_llm.script(ToolCalls(Call("test_confirm", {"action": "do", "note": "n"})), Text("ok"))
    env = slow_env(database_url, fake_llm, agent_types_file, **transport)
    async with two_runners(env, tester, max_runs=(16, 0)) as (a, b):
        messages_url, run_url = await post(a, tester)
        waiting = await cell_with(a, messages_url, "awaiting_approval")
        decided = await b.post(f"{messages_url}/{waiting['id']}/approval", json={"approve": True})
        assert decided.status_code == 200, decided.text
        assert (await run_ended(a, run_url, timeout=WITHIN))["status"] == "completed"
        assert (await cell_with(a, messages_url, "success"))["id"] == waiting["id"]
