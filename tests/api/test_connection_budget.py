"""The process's database connections are bounded by DATABASE_MAX_CONNECTIONS: requests
queue for a connection instead of opening more, and a wait that outlasts the pool timeout
is a 503 problem+json with Retry-After, not a 500."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import httpx
import sqlalchemy.exc
from advanced_alchemy.extensions.litestar import SQLAlchemyPlugin
from litestar import Litestar
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from app import create_app
from app.db.config import connection_budget, pool_options
from app.settings import Settings
from tests.api.support import assert_problem
from tests.conftest import ApiUser, running_lifespan


@asynccontextmanager
async def serving(settings: Settings) -> AsyncIterator[tuple[AsyncEngine, httpx.AsyncClient]]:
    """A second app on the test database, with its own settings and engine."""
    app: Litestar = create_app(settings)
    engine = app.plugins.get(SQLAlchemyPlugin).config[0].get_engine()
    async with running_lifespan(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            yield engine, client


class OpenConnections:
    """Counts the app's connections in use, and the most at once."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.now = self.peak = 0
        event.listen(engine.sync_engine, "checkout", self._checkout)
        event.listen(engine.sync_engine, "checkin", self._checkin)

    def _checkout(self, *_: Any) -> None:
        self.now += 1
        self.peak = max(self.peak, self.now)

    def _checkin(self, *_: Any) -> None:
        self.now -= 1


async def test_requests_beyond_the_budget_queue_and_all_succeed(
    settings: Settings, alice: ApiUser
) -> None:
    async with serving(replace(settings, database_max_connections=2)) as (engine, client):
        connections = OpenConnections(engine)
        responses = await asyncio.gather(
            *(client.get("/api/threads", headers=alice.headers) for _ in range(10))
        )
    assert [r.status_code for r in responses] == [200] * 10
    assert 1 <= connections.peak <= 2


async def test_a_request_that_waits_too_long_for_a_connection_is_503(
    settings: Settings, alice: ApiUser
) -> None:
    budget = replace(settings, database_max_connections=1, database_pool_timeout_seconds=0.1)
    async with serving(budget) as (engine, client):
        held = await the_only_connection(engine)  # the whole budget, busy elsewhere
        try:
            await held.execute(text("SELECT 1"))
            response = await client.get("/api/threads", headers=alice.headers)
            assert_problem(response, 503)
            assert int(response.headers["retry-after"]) > 0
        finally:
            await held.close()
        # The connection is back: the same request is served.
        assert (await client.get("/api/threads", headers=alice.headers)).status_code == 200


async def the_only_connection(engine: AsyncEngine) -> AsyncConnection:
    """The pool's one connection, once the app's background work (the memory keeper's
    first pass at startup, the timers) has given it back: each try waits the pool's
    timeout."""
    for _ in range(50):
        try:
            return await engine.connect()
        except sqlalchemy.exc.TimeoutError:
            continue
    raise AssertionError("the app's background work kept its one connection")


def _split(settings: Settings) -> tuple[int, int, int]:
    budget = connection_budget(settings)
    assert budget.app + budget.runner + budget.lane == settings.database_max_connections
    return budget.app, budget.runner, budget.lane


def test_the_budget_is_split_between_the_app_the_runner_and_the_lane() -> None:
    postgres = Settings(database_url="postgresql+asyncpg://db/app", database_max_connections=20)
    assert _split(postgres) == (8, 10, 2)
    assert _split(replace(postgres, database_max_connections=3)) == (2, 1, 0)
    assert _split(replace(postgres, database_max_connections=1)) == (1, 0, 0)  # shared
    assert _split(replace(postgres, runner_enabled=False)) == (18, 0, 2)
    sqlite = Settings(database_url="sqlite+aiosqlite:///x.sqlite3", database_max_connections=5)
    assert _split(sqlite) == (5, 0, 0)
    assert _split(replace(sqlite, database_max_connections=16)) == (14, 0, 2)
    # An in-memory database is one connection's: no lane can read it.
    in_memory = replace(sqlite, database_url="sqlite+aiosqlite://", database_max_connections=16)
    assert _split(in_memory) == (16, 0, 0)


async def test_the_connection_used_last_is_handed_out_first(settings: Settings) -> None:
    """Its caches are warm (prepared statements, pages): a queue would rotate through
    every pooled connection and prepare each statement on each of them again."""
    budget = replace(settings, database_max_connections=4)
    # The app's pool options on a pool of its own: the app's background loops (timers,
    # the memory keeper) would take connections from the app's pool meanwhile.
    engine = create_async_engine(budget.database_url, **pool_options(budget, 2))
    try:
        first, second = await engine.connect(), await engine.connect()
        ids = [id((await c.get_raw_connection()).dbapi_connection) for c in (first, second)]
        await first.close()
        await second.close()
        for _ in range(3):  # `second` went back last: it comes out each time
            async with engine.connect() as again:
                assert id((await again.get_raw_connection()).dbapi_connection) == ids[1]
    finally:
        await engine.dispose()
