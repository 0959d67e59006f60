# ruff: noqa: ASYNC109, ASYNC110 - polling another process over HTTP
"""The app as a real server process (uvicorn) for tests that kill or outlive it."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncSession

from app.settings import PROJECT_ROOT
from tests.conftest import ApiUser, make_api_user
from tests.support.fake_llm import Call, FakeLLM, Text, ToolCalls


async def slow_tester(db: AsyncSession, fake_llm: FakeLLM) -> ApiUser:
    """A user of the test agent type whose next run waits two minutes in `test_slow`: a
    run under way when its server process is killed."""
    fake_llm.reset()
    fake_llm.script(ToolCalls(Call("test_slow", {"action": "wait", "seconds": 120})), Text("never"))
    user = await make_api_user(db)
    user.agent.agent_type = "tester"
    await db.commit()
    return user


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_env(
    database_url: str, fake_llm: FakeLLM, agent_types_file: Path, **extra: str
) -> dict[str, str]:
    """The environment of a server process: the test database, the fake model, test tools."""
    return {
        **os.environ,
        "DATABASE_URL": database_url,
        "LLM_MODEL": "openai/fake-model",
        "LLM_API_BASE": fake_llm.base_url,
        "LLM_API_KEY": "test-key",
        "RUNNER_POLL_SECONDS": "0.2",
        "AGENT_TYPES_FILE": str(agent_types_file),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        # No bundled demo MCP server: these processes test timing, not MCP.
        "MCP_DEMO_SERVER": "0",
        **extra,
    }


def start_server(
    port: int, env: dict[str, str], factory: str = "tests.support.orchestrator_app:create"
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "--factory",
            factory,
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


async def until(check: Callable[[], Awaitable[Any]], timeout: float, every: float = 0.1) -> Any:
    """Poll a condition over HTTP (another process: no in-process event to await)."""
    async with asyncio.timeout(timeout):
        while not (result := await check()):
            await asyncio.sleep(every)
        return result


async def ready(client: httpx.AsyncClient) -> bool:
    try:
        return (await client.get("/api/health")).status_code == 200
    except httpx.TransportError:
        return False


async def wait_ready(client: httpx.AsyncClient) -> None:
    """Starting takes a few seconds, many more on a loaded machine (importing litellm)."""
    await until(lambda: ready(client), timeout=120)


async def run_until_tool_runs(http: httpx.AsyncClient, agent_id: Any) -> tuple[str, str]:
    """Post a message to a new thread; return (messages url, run url) once a cell of its run
    is in_progress (the scripted slow tool is running)."""
    thread = (await http.post("/api/threads", json={"agent_id": str(agent_id)})).json()
    messages_url = f"/api/threads/{thread['id']}/messages"
    posted = (await http.post(messages_url, json={"content": "go"})).json()

    async def tool_running() -> bool:
        items = (await http.get(messages_url)).json()["items"]
        return any(m.get("tool_activity", {}).get("status") == "in_progress" for m in items)

    await until(tool_running, timeout=60)
    return messages_url, f"/api/threads/{thread['id']}/runs/{posted['run']['id']}"


async def run_ended(http: httpx.AsyncClient, run_url: str, timeout: float) -> dict[str, Any]:
    """The run once it is no longer running (polled over HTTP: another process ends it)."""

    async def ended() -> dict[str, Any] | None:
        run = (await http.get(run_url)).json()
        return run if run["status"] != "running" else None

    return await until(ended, timeout=timeout)
