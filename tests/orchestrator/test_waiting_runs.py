"""A run waiting on its model holds a runner slot and a connection to the provider, but
no database connection: a process can have a thousand of them at once."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import REGISTRY

from app.realtime.events import MessageFrame
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Text


@pytest.fixture(scope="module")
def settings_overrides() -> dict:
    return {"llm_timeout_seconds": 60.0}  # the model stays silent as long as the test needs


def gauge(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def database_connections_in_use() -> float:
    return sum(gauge("toolcells_db_pool_checked_out", pool=p) for p in ("app", "runner"))


async def test_a_run_waiting_on_its_model_holds_no_database_connection(
    api: OrchestratorApi,
) -> None:
    api.llm.script(Text("Let me think about that", hang_after=True))
    thread_id = await api.new_thread()
    response = await api.post(thread_id, "a hard question")
    assert response.status_code == 202
    # the reply is stored (a write), then the model goes silent mid-answer
    await api.frames.wait_for(
        lambda f: isinstance(f, MessageFrame) and f.message.role == "assistant"
    )
    async with asyncio.timeout(10):  # the write's connection goes back to its pool
        while database_connections_in_use() != 0:  # noqa: ASYNC110 - read as a scraper would
            await asyncio.sleep(0.01)
    assert gauge("toolcells_runner_slots_in_use") == 1
    assert gauge("toolcells_model_door_streams", provider="openai") == 1
    assert 0.05 <= gauge("toolcells_stream_delta_seconds") <= 0.15
    run = await api.get_run(thread_id, response.json()["run"]["id"])
    assert run["status"] == "running"  # still streaming
