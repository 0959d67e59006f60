from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import replace
from typing import Any

import httpx
import pytest

from app import create_app
from app.settings import Settings
from tests.conftest import ApiUser
from tests.realtime.support import RedisServer, Server, free_socket, serve

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")

ServerFactory = Callable[..., AbstractAsyncContextManager[Server]]


@pytest.fixture
def realtime_settings(settings: Settings) -> Settings:
    # A unique channel prefix: tests sharing one Redis never hear each other.
    return replace(settings, channels_prefix=f"test-{uuid.uuid4().hex[:10]}:")


@pytest.fixture
def start_server(realtime_settings: Settings) -> ServerFactory:
    """`async with start_server(**settings_overrides) as server:` a fresh app under uvicorn."""

    @asynccontextmanager
    async def start(send_buffer: int | None = None, **overrides: Any) -> AsyncIterator[Server]:
        app = create_app(replace(realtime_settings, **overrides))
        async with serve(app, free_socket(send_buffer)) as server:
            yield server

    return start


@pytest.fixture
async def server(start_server: ServerFactory, client: httpx.AsyncClient) -> AsyncIterator[Server]:
    async with start_server() as running:
        yield running


@pytest.fixture
async def http(server: Server) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.http) as http_client:
        yield http_client


async def new_thread(http: httpx.AsyncClient, user: ApiUser) -> str:
    response = await http.post(
        "/api/threads", json={"agent_id": str(user.agent.id), "title": "t"}, headers=user.headers
    )
    assert response.status_code == 201, response.text
    return response.json()["id"]


@pytest.fixture
def process_env(settings: Settings) -> dict[str, str]:
    """The environment of server processes sharing the test database and Redis."""
    return {
        **os.environ,
        "DATABASE_URL": settings.database_url,
        "REDIS_URL": REDIS_URL,
        "CHANNELS_PREFIX": f"test-{uuid.uuid4().hex[:10]}:",
        "RUNNER_ENABLED": "0",
    }


@pytest.fixture
async def own_redis() -> AsyncIterator[RedisServer]:
    """A Redis of the test's own, which it may stop and start (never the shared one)."""
    redis = RedisServer()
    await redis.start()
    try:
        yield redis
    finally:
        await redis.stop()
