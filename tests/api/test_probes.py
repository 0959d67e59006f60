"""The probes: liveness (`/api/health`) is the process, so a database that is down or slow
restarts nothing; readiness (`/api/health/ready`) is the database, at the code's latest
migration (and Redis, tests/api/test_operability.py)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace

import httpx
from advanced_alchemy.extensions.litestar import SQLAlchemyPlugin
from alembic.script import ScriptDirectory
from litestar import Litestar
from sqlalchemy import text

from app.db.schema import alembic_config
from app.settings import Settings
from tests.api.support import assert_problem
from tests.api.test_database_outage import serving


async def test_liveness_answers_at_once_while_the_pool_is_exhausted(settings: Settings) -> None:
    """Every connection busy (a load peak, a database that stopped answering): liveness
    says so within its second and stays 200, where it used to wait for a connection (the
    pool's timeout, past any probe's) and then answer 503."""
    busy = replace(settings, database_max_connections=1, database_pool_timeout_seconds=5.0)
    async with serving(busy) as (app, client):
        engine = app.plugins.get(SQLAlchemyPlugin).config[0].get_engine()
        async with engine.connect() as held:
            await held.execute(text("SELECT 1"))
            started = time.monotonic()
            response = await client.get("/api/health")
            assert time.monotonic() - started < 2.5
            assert response.status_code == 200
            assert response.json() == {"status": "degraded", "database": "unavailable"}
        assert (await client.get("/api/health")).json() == {"status": "ok", "database": "ok"}


@asynccontextmanager
async def revision_set_to(app: Litestar, revision: str) -> AsyncIterator[None]:
    """The database's recorded revision replaced by `revision` meanwhile (the tables stay
    as they are: readiness reads the record)."""
    engine = app.plugins.get(SQLAlchemyPlugin).config[0].get_engine()
    async with engine.begin() as connection:
        (current,) = (
            await connection.execute(text("SELECT version_num FROM alembic_version"))
        ).one()
        await connection.execute(
            text("UPDATE alembic_version SET version_num = :v"), {"v": revision}
        )
    try:
        yield
    finally:
        async with engine.begin() as connection:
            await connection.execute(
                text("UPDATE alembic_version SET version_num = :v"), {"v": current}
            )


async def test_not_ready_until_the_database_is_at_the_latest_migration(
    app: Litestar, client: httpx.AsyncClient, settings: Settings
) -> None:
    scripts = ScriptDirectory.from_config(alembic_config(settings.database_url))
    head = scripts.get_revision(scripts.get_current_head())
    assert isinstance(head.down_revision, str)
    async with revision_set_to(app, head.down_revision):  # a release's migration not run
        response = await client.get("/api/health/ready")
        body = assert_problem(response, 503)
        assert body["detail"] == (
            "Not ready: the database schema is behind: run `litestar database upgrade`."
        )
        assert int(response.headers["Retry-After"]) > 0
        # liveness is the process: still 200, the database answers
        health = await client.get("/api/health")
        assert health.status_code == 200 and health.json()["database"] == "ok"
    # A revision this code does not know: a newer release migrated it (a rolling deploy),
    # and its migrations keep the older code working.
    async with revision_set_to(app, "a_newer_release"):
        assert (await client.get("/api/health/ready")).status_code == 200
    assert (await client.get("/api/health/ready")).json()["status"] == "ready"
