# ruff: noqa: ASYNC109, ASYNC110 - polling another process over HTTP
"""SIGKILL the server mid-tool: after a restart nothing stays in_progress and the run failed.

The server runs as a real subprocess (uvicorn) on the test database, its model pointed at
the fake server, with a slow test tool; it is killed while the tool runs.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncSession

from app.settings import PROJECT_ROOT
from tests.conftest import make_api_user
from tests.support.fake_llm import Call, FakeLLM, Text, ToolCalls


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start_server(port: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "--factory",
            "tests.support.orchestrator_app:create",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def _until(check: Callable[[], Awaitable[Any]], timeout: float, every: float = 0.1) -> Any:
    """Poll a condition over HTTP (another process: no in-process event to await)."""
    async with asyncio.timeout(timeout):
        while not (result := await check()):
            await asyncio.sleep(every)
        return result


async def _ready(client: httpx.AsyncClient) -> bool:
    try:
        return (await client.get("/api/health")).status_code == 200
    except httpx.TransportError:
        return False


async def test_sigkill_mid_tool_leaves_nothing_in_progress(
    database_url: str,
    db: AsyncSession,
    fake_llm: FakeLLM,
    agent_types_file: Path,
    client: httpx.AsyncClient,
) -> None:
    fake_llm.reset()
    fake_llm.script(ToolCalls(Call("test_slow", {"action": "wait", "seconds": 120})), Text("never"))
    user = await make_api_user(db)
    user.agent.agent_type = "tester"
    await db.commit()
    port = _free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "LLM_MODEL": "openai/fake-model",
        "LLM_API_BASE": fake_llm.base_url,
        "LLM_API_KEY": "test-key",
        "RUN_LEASE_SECONDS": "30",  # reaped at restart anyway: its owner process is dead
        "RUNNER_POLL_SECONDS": "0.2",
        "AGENT_TYPES_FILE": str(agent_types_file),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    server = _start_server(port, env)
    try:
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", headers=user.headers
        ) as http:
            await _until(lambda: _ready(http), timeout=30)
            thread = (await http.post("/api/threads", json={"agent_id": str(user.agent.id)})).json()
            posted = (
                await http.post(f"/api/threads/{thread['id']}/messages", json={"content": "go"})
            ).json()
            messages_url = f"/api/threads/{thread['id']}/messages"

            async def tool_running() -> bool:
                items = (await http.get(messages_url)).json()["items"]
                return any((m["tool_activity"] or {}).get("status") == "in_progress" for m in items)

            await _until(tool_running, timeout=15)
            server.send_signal(signal.SIGKILL)
            server.wait(timeout=10)

            server = _start_server(port, env)
            await _until(lambda: _ready(http), timeout=30)
            run_url = f"/api/threads/{thread['id']}/runs/{posted['run']['id']}"

            async def run_ended() -> dict | None:
                run = (await http.get(run_url)).json()
                return run if run["status"] != "running" else None

            run = await _until(run_ended, timeout=15)
            assert run["status"] == "failed" and "nterrupted" in run["error"]
            items = (await http.get(messages_url)).json()["items"]
            activities = [m["tool_activity"] for m in items if m["tool_activity"]]
            assert activities and all(a["status"] in ("success", "failure") for a in activities)
            assert activities[0]["error_type"] == "system_error"
            assert activities[0]["error"] == "interrupted"
    finally:
        server.kill()
        server.wait(timeout=10)
