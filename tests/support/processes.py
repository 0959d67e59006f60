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

from app.settings import PROJECT_ROOT
from tests.support.fake_llm import FakeLLM


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
        **extra,
    }


def start_server(port: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
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
