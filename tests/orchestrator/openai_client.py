"""The orchestrator's app (runner on, fake model) served on a real loopback socket, and
the official `openai` client pointed at it (fixtures of tests/orchestrator/conftest.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import openai
import pytest
import uvicorn
from litestar import Litestar

from tests.orchestrator.support import OrchestratorApi
from tests.realtime.support import free_socket


@pytest.fixture(scope="module")
async def openai_base_url(orch_app: Litestar) -> AsyncIterator[str]:
    """uvicorn in this event loop; the app's lifespan is already running (orch_app)."""
    sock = free_socket()
    server = uvicorn.Server(uvicorn.Config(orch_app, lifespan="off", log_level="warning"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    async with asyncio.timeout(15):
        while not server.started:  # noqa: ASYNC110 - uvicorn has no started event
            await asyncio.sleep(0.01)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    server.should_exit = True
    await task


@pytest.fixture
async def openai_client(
    api: OrchestratorApi, openai_base_url: str
) -> AsyncIterator[openai.AsyncOpenAI]:
    # max_retries=0: a retried completion would be a second run (the server says so too)
    async with openai.AsyncOpenAI(
        base_url=openai_base_url, api_key=api.user.token, max_retries=0
    ) as c:
        yield c
