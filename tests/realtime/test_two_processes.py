"""Two server processes sharing the database and Redis: a client on one sees the other's writes."""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import httpx
import pytest

from app.settings import PROJECT_ROOT, Settings
from tests.conftest import ApiUser
from tests.realtime.conftest import new_thread
from tests.realtime.support import WsClient, free_socket

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@asynccontextmanager
async def server_process(env: dict[str, str]) -> AsyncIterator[str]:
    """`uvicorn app:create_app` in a subprocess; yields its base URL once healthy."""
    sock = free_socket()
    port = sock.getsockname()[1]
    sock.close()
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "uvicorn", "app:create_app", "--factory"),
        *("--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"),
        cwd=PROJECT_ROOT,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=base) as http, asyncio.timeout(60):
            while True:
                assert process.returncode is None, "server process exited"
                try:
                    if (await http.get("/api/health")).status_code == 200:
                        break
                except httpx.TransportError:
                    await asyncio.sleep(0.1)  # polling: the process is still starting
        yield base
    finally:
        process.terminate()
        try:
            async with asyncio.timeout(15):
                await process.wait()
        except TimeoutError:
            process.kill()
            await process.wait()


@pytest.fixture
def process_env(settings: Settings) -> Iterator[dict[str, str]]:
    yield {
        **os.environ,
        "DATABASE_URL": settings.database_url,
        "REDIS_URL": REDIS_URL,
        "CHANNELS_PREFIX": f"test-{uuid.uuid4().hex[:10]}:",
        "RUNNER_ENABLED": "0",
    }


async def test_a_client_on_one_process_sees_a_post_on_the_other(
    process_env: dict[str, str], client: httpx.AsyncClient, alice: ApiUser
) -> None:
    async with (
        server_process(process_env) as first,
        server_process(process_env) as second,
        httpx.AsyncClient(base_url=second) as http,
    ):
        thread_id = await new_thread(http, alice)
        ws_url = first.replace("http://", "ws://") + "/api/ws"
        async with WsClient.connect(ws_url, alice.token) as ws:
            await ws.subscribe(thread_id)
            await ws.wait_type("subscribed", last_seq=0)
            posted = await http.post(
                f"/api/threads/{thread_id}/messages",
                json={"content": "from the other process"},
                headers=alice.headers,
            )
            assert posted.status_code == 202, posted.text
            body = posted.json()
            message = await ws.wait_type("message", seq=1)
            assert message["message"] == body["message"]
            run = await ws.wait_type("run")
            assert run["run"]["id"] == body["run"]["id"]
            assert run["run"]["status"] == "queued"

            cancelled = await http.post(
                f"/api/threads/{thread_id}/runs/{body['run']['id']}/cancel", headers=alice.headers
            )
            assert cancelled.status_code in (200, 202), cancelled.text
            assert (await ws.wait_type("run", within=15, run=cancelled.json()))["run"][
                "status"
            ] == ("cancelled")
