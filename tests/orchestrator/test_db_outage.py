"""The database goes away mid-run: the run ends saying so once it is back.

PostgreSQL only: the test stops and restarts a cluster of its own under a running app.
SQLite has no such outage (the database is a local file opened by the process itself;
there is no server to lose).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from advanced_alchemy.extensions.litestar import SQLAlchemyPlugin
from sqlalchemy.ext.asyncio import async_sessionmaker

from app import create_app
from app.orchestrator.loop.outage import DB_UNREACHABLE, DB_UNREACHABLE_CELL
from tests.conftest import make_api_user, running_lifespan
from tests.orchestrator.conftest import orchestrator_settings
from tests.orchestrator.support import FrameRecorder
from tests.support.databases import DIALECTS, migrate
from tests.support.fake_llm import Call, FakeLLM, Text, ToolCalls
from tests.support.pg_cluster import Cluster, available, throwaway_cluster
from tests.support.test_tools import GateTool

pytestmark = pytest.mark.skipif(
    "postgresql" not in DIALECTS or not available(),
    reason="PostgreSQL only (its own cluster: needs initdb/pg_ctl); SQLite has no server to lose",
)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with throwaway_cluster() as cluster:
        migrate(cluster.url())
        yield cluster


class _Seen(logging.Handler):
    """Sets an event when the runner logs that it retries a write (no sleeps in tests)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text, self.event = text, asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.event.set()


@pytest.fixture
async def retrying() -> AsyncIterator[asyncio.Event]:
    handler = _Seen("retrying a run's last write")
    logger = logging.getLogger("app.orchestrator.loop.outage")
    logger.addHandler(handler)
    try:
        yield handler.event
    finally:
        logger.removeHandler(handler)


async def _get_as_a_client(http: httpx.AsyncClient, url: str) -> dict:
    """GET as an app does after an outage: a 503 (a pooled connection found dead) is
    retried; the pool is renewed by then."""
    for _ in range(5):
        response = await http.get(url)
        if response.status_code != 503:
            break
        assert response.headers["retry-after"]
    assert response.status_code == 200, response.text
    return response.json()


async def test_a_run_caught_by_a_database_outage_ends_saying_so(
    cluster: Cluster, fake_llm: FakeLLM, agent_types_file: Path, retrying: asyncio.Event
) -> None:
    fake_llm.reset()
    fake_llm.script(ToolCalls(Call("test_gate", {"action": "wait"})), Text("never"))
    GateTool.gate = asyncio.Event()
    settings = orchestrator_settings(
        cluster.url(), fake_llm, agent_types_file, run_lease_seconds=30.0
    )
    app = create_app(settings)
    frames = FrameRecorder()
    async with running_lifespan(app):
        engine = app.plugins.get(SQLAlchemyPlugin).config[0].get_engine()
        async with async_sessionmaker(engine, expire_on_commit=False)() as db:
            user = await make_api_user(db)
            user.agent.agent_type = "tester"
            await db.commit()
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://testserver", headers=user.headers
        ) as http:
            with frames.listening():
                thread = (
                    await http.post("/api/threads", json={"agent_id": str(user.agent.id)})
                ).json()
                posted = await http.post(
                    f"/api/threads/{thread['id']}/messages", json={"content": "go"}
                )
                run_id = posted.json()["run"]["id"]
                await frames.wait_for(
                    lambda f: (
                        getattr(getattr(f, "message", None), "tool_activity", None) is not None
                        and f.message.tool_activity.status == "in_progress"
                    ),  # type: ignore[attr-defined]
                    timeout=60,
                )
                await asyncio.to_thread(cluster.stop)
                GateTool.gate.set()  # the tool ends; its result cannot be written
                async with asyncio.timeout(60):
                    await retrying.wait()
                await asyncio.to_thread(cluster.start)
                await frames.wait_for(
                    lambda f: (
                        str(getattr(getattr(f, "run", None), "id", "")) == run_id
                        and f.run.status == "failed"
                    ),  # type: ignore[attr-defined]
                    timeout=60,
                )
            run = await _get_as_a_client(http, f"/api/threads/{thread['id']}/runs/{run_id}")
            assert run["status"] == "failed" and run["error"] == DB_UNREACHABLE
            items = (await _get_as_a_client(http, f"/api/threads/{thread['id']}/messages"))["items"]
            cell = next(m["tool_activity"] for m in items if "tool_activity" in m)
            assert cell["status"] == "failure" and cell["error_type"] == "system_error"
            assert cell["error"] == DB_UNREACHABLE_CELL
