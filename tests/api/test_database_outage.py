"""The database goes away: requests answer 503 problem+json with Retry-After (never a 500)
and /api/health says the database is down (still 200: liveness), /api/health/ready 503.

PostgreSQL: a cluster of the test's own, stopped (immediate shutdown) while the app runs,
then started again. SQLite has no server to stop and an open connection keeps reading a
file even after it is moved away, so its variant points the app at a database path that
cannot be opened (a directory that does not exist), which is what an unreachable SQLite
database looks like to the app.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg
import httpx
import pytest
from advanced_alchemy.extensions.litestar import SQLAlchemyPlugin
from litestar import Litestar
from sqlalchemy.ext.asyncio import async_sessionmaker

from app import create_app
from app.settings import Settings
from tests.api.support import assert_problem
from tests.conftest import ApiUser, make_api_user, running_lifespan
from tests.support.databases import DIALECTS, migrate
from tests.support.pg_cluster import throwaway_cluster


def assert_database_down(response: httpx.Response) -> None:
    assert_problem(response, 503)
    assert int(response.headers["retry-after"]) > 0


async def assert_health_down(client: httpx.AsyncClient) -> None:
    # Liveness stays 200 (restarting the process cannot fix the database) and says so;
    # readiness takes the process out of rotation.
    health = await client.get("/api/health")
    assert health.status_code == 200
    assert health.json() == {"status": "degraded", "database": "unavailable"}
    assert_database_down(await client.get("/api/health/ready"))


@asynccontextmanager
async def serving(settings: Settings) -> AsyncIterator[tuple[Litestar, httpx.AsyncClient]]:
    app = create_app(settings)
    async with running_lifespan(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            yield app, client


async def _api_user(app: Litestar) -> ApiUser:
    engine = app.plugins.get(SQLAlchemyPlugin).config[0].get_engine()
    async with async_sessionmaker(engine, expire_on_commit=False)() as session:
        return await make_api_user(session)


@pytest.mark.skipif("postgresql" not in DIALECTS, reason="TEST_DIALECTS excludes postgresql")
async def test_postgresql_stopped_under_the_app_answers_503() -> None:
    with throwaway_cluster() as cluster:
        admin = await asyncpg.connect(f"postgresql://postgres@127.0.0.1:{cluster.port}/postgres")
        try:
            await admin.execute("CREATE DATABASE app")
        finally:
            await admin.close()
        migrate(cluster.url("app"))
        settings = Settings(database_url=cluster.url("app"), runner_enabled=False)
        async with serving(settings) as (app, client):
            alice = await _api_user(app)
            assert (await client.get("/api/threads", headers=alice.headers)).status_code == 200

            cluster.stop()
            # First the pooled connection is found dead, then new ones are refused.
            assert_database_down(await client.get("/api/threads", headers=alice.headers))
            assert_database_down(await client.get("/api/threads", headers=alice.headers))
            created = await client.post(
                "/api/threads", json={"agent_id": str(alice.agent.id)}, headers=alice.headers
            )
            assert_database_down(created)
            await assert_health_down(client)

            cluster.start()
            health = await client.get("/api/health")
            assert health.status_code == 200, health.text
            assert (await client.get("/api/threads", headers=alice.headers)).status_code == 200


@pytest.mark.skipif("sqlite" not in DIALECTS, reason="TEST_DIALECTS excludes sqlite")
async def test_sqlite_database_that_cannot_be_opened_answers_503(tmp_path: Path) -> None:
    unreachable = tmp_path / "missing-directory" / "app.sqlite3"
    settings = Settings(database_url=f"sqlite+aiosqlite:///{unreachable}", runner_enabled=False)
    async with serving(settings) as (_app, client):
        response = await client.get("/api/threads", headers={"Authorization": "Bearer tc_x"})
        assert_database_down(response)
        login = await client.post(
            "/api/auth/token", json={"email": "a@example.com", "password": "whatever-pass"}
        )
        assert_database_down(login)
        await assert_health_down(client)
