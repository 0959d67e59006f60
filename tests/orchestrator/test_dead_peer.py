"""A peer's runs end within seconds of its death, long before their 30 s lease expires.

Two server processes share the test database. The first runs a slow tool and is killed
with SIGKILL; the second sees the first's heartbeat stop and fails its run and closes the
open cell within a few seconds of its heartbeat timeout (3 s here; the lease alone would
take 30). The second claims no runs
(`RUNNER_MAX_CONCURRENT_RUNS=0`: its heartbeat and reaper still run), so the run is
surely the first's and both can start at once.
"""

from __future__ import annotations

import signal
from pathlib import Path

import httpx
from sqlalchemy.ext.asyncio import AsyncSession

from tests.support.fake_llm import FakeLLM
from tests.support.processes import (
    free_port,
    run_ended,
    run_until_tool_runs,
    server_env,
    slow_tester,
    start_server,
    wait_ready,
)


async def test_a_surviving_peer_ends_the_cells_of_a_killed_one_within_seconds(
    database_url: str,
    db: AsyncSession,
    fake_llm: FakeLLM,
    agent_types_file: Path,
    client: httpx.AsyncClient,
) -> None:
    user = await slow_tester(db, fake_llm)
    env = server_env(
        database_url, fake_llm, agent_types_file,
        RUN_LEASE_SECONDS="30", RUNNER_HEARTBEAT_TIMEOUT_SECONDS="3",
    )  # fmt: skip
    port_a, port_b = free_port(), free_port()
    doomed = start_server(port_a, env)
    survivor = start_server(port_b, {**env, "RUNNER_MAX_CONCURRENT_RUNS": "0"})
    try:
        async with (
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{port_a}", headers=user.headers) as a,
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{port_b}", headers=user.headers) as b,
        ):
            await wait_ready(a)
            await wait_ready(b)
            messages_url, run_url = await run_until_tool_runs(a, user.agent.id)
            doomed.send_signal(signal.SIGKILL)
            doomed.wait(timeout=10)

            run = await run_ended(b, run_url, timeout=8)  # the lease has 30 s left
            assert run["status"] == "failed"
            assert run["error"] == "Interrupted: the process running this run stopped responding."
            items = (await b.get(messages_url)).json()["items"]
            cell = next(m["tool_activity"] for m in items if "tool_activity" in m)
            assert cell["status"] == "failure" and cell["error_type"] == "system_error"
    finally:
        for server in (doomed, survivor):
            server.kill()
            server.wait(timeout=10)
