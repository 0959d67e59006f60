"""SIGKILL the server mid-tool: after a restart nothing stays in_progress and the run failed.

The server runs as a real subprocess (uvicorn) on the test database, its model pointed at
the fake server, with a slow test tool; it is killed while the tool runs.
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


async def test_sigkill_mid_tool_leaves_nothing_in_progress(
    database_url: str,
    db: AsyncSession,
    fake_llm: FakeLLM,
    agent_types_file: Path,
    client: httpx.AsyncClient,
) -> None:
    user = await slow_tester(db, fake_llm)
    port = free_port()
    # reaped at restart anyway: its owner process is dead
    env = server_env(database_url, fake_llm, agent_types_file, RUN_LEASE_SECONDS="30")
    server = start_server(port, env)
    try:
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", headers=user.headers
        ) as http:
            await wait_ready(http)
            messages_url, run_url = await run_until_tool_runs(http, user.agent.id)
            server.send_signal(signal.SIGKILL)
            server.wait(timeout=10)

            server = start_server(port, env)
            await wait_ready(http)
            run = await run_ended(http, run_url, timeout=15)
            assert run["status"] == "failed" and "nterrupted" in run["error"]
            items = (await http.get(messages_url)).json()["items"]
            activities = [m["tool_activity"] for m in items if "tool_activity" in m]
            assert activities and all(a["status"] in ("success", "failure") for a in activities)
            assert activities[0]["error_type"] == "system_error"
            assert activities[0]["error"] == "interrupted"
    finally:
        server.kill()
        server.wait(timeout=10)
