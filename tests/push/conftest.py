"""A push-enabled app under uvicorn (real sockets), its model a fake OpenAI server and its
APNs a fake HTTP/2 server with a test CA (tests/support/fake_apns.py)."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app import create_app
from app.tools.runtime.toolsets import load_agent_types
from tests.conftest import _empty_all_tables
from tests.orchestrator.conftest import agent_types_file, fake_llm, orchestrator_settings
from tests.orchestrator.support import FrameRecorder, OrchestratorApi
from tests.realtime.support import Server, serve
from tests.support.fake_apns import FakeApns
from tests.support.fake_llm import FakeLLM

__all__ = ("agent_types_file", "fake_llm")
BUNDLE = "com.example.toolcells"


def apns_overrides(apns: FakeApns, **more: Any) -> dict[str, Any]:
    return {
        "apns_key_file": apns.key_file,
        "apns_key_id": apns.key_id,
        "apns_team_id": apns.team_id,
        "apns_topic": BUNDLE,
        "apns_base_url": apns.base_url,
        "apns_ca_file": apns.ca_file,
        "push_retry_base_seconds": 0.05,
        "push_poll_seconds": 0.2,
        "live_activity_update_seconds": 0.2,
        **more,
    }


@pytest.fixture(scope="session")
async def fake_apns(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[FakeApns]:
    async with FakeApns(tmp_path_factory.mktemp("apns")) as server:
        yield server


@pytest.fixture(scope="module")
async def push_server(
    database_url: str, fake_llm: FakeLLM, agent_types_file: Path, fake_apns: FakeApns
) -> AsyncIterator[Server]:
    import app.orchestrator.worker  # noqa: F401  (imports litellm: slow, outside serve's wait)

    settings = orchestrator_settings(
        database_url, fake_llm, agent_types_file, **apns_overrides(fake_apns)
    )
    async with serve(create_app(settings)) as server:
        yield server
    load_agent_types(None)


@pytest.fixture
async def api(
    push_server: Server,
    fake_llm: FakeLLM,
    fake_apns: FakeApns,
    db: AsyncSession,
    session_factory: async_sessionmaker[AsyncSession],
    agent_types_file: Path,
) -> AsyncIterator[OrchestratorApi]:
    load_agent_types(agent_types_file)
    fake_llm.reset()
    fake_apns.clear()
    recorder = FrameRecorder()
    async with httpx.AsyncClient(base_url=push_server.http) as client:
        with recorder.listening():
            api = await OrchestratorApi.create(client, db, push_server.app, fake_llm, recorder)
            try:
                yield api
            finally:
                await api.drain()
    await _empty_all_tables(session_factory)


def device_token() -> str:
    return secrets.token_hex(32)


async def register_device(api: OrchestratorApi, token: str | None = None, **fields: Any) -> dict:
    body = {"token": token or device_token(), "environment": "sandbox", "bundle_id": BUNDLE}
    response = await api.client.post("/api/devices", json=body | fields, headers=api.headers)
    assert response.status_code == 201, response.text
    return response.json() | {"token": body["token"]}
