"""Fixtures: a migrated database per dialect, the app on it, users with tokens.

Every test that takes `client` runs once on SQLite and once on PostgreSQL (set
TEST_DIALECTS to narrow it). Tests are isolated by emptying every table after each one.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from advanced_alchemy.extensions.litestar import SQLAlchemyPlugin
from litestar import Litestar
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from app import create_app
from app.db.base import metadata
from app.db.models import Agent, User
from app.lib.security import new_token, token_digest
from app.settings import Settings
from tests.factories import AgentFactory, ApiTokenFactory, UserFactory
from tests.support.databases import (
    DIALECTS,
    create_postgres_database,
    drop_postgres_database,
    migrate,
    postgres_unreachable,
    sqlite_url,
)

pytest_plugins = ["tests.support.hang_dump"]


def pytest_sessionstart(session: pytest.Session) -> None:
    # One clear line instead of a ConnectionRefusedError per test.
    if (reason := postgres_unreachable()) is not None:
        pytest.exit(reason, returncode=4)


@pytest.fixture(scope="session", params=DIALECTS)
def database_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    if request.param == "sqlite":
        url = sqlite_url(tmp_path_factory.mktemp("sqlite"))
        migrate(url)
        yield url
        return
    url, name = create_postgres_database()
    try:
        migrate(url)
        yield url
    finally:
        drop_postgres_database(name)


@pytest.fixture(params=DIALECTS)
def empty_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database (no migrations applied), per dialect, for CLI and migration tests."""
    if request.param == "sqlite":
        yield sqlite_url(tmp_path)
        return
    url, name = create_postgres_database()
    try:
        yield url
    finally:
        drop_postgres_database(name)


@pytest.fixture(scope="session")
def dialect(database_url: str) -> str:
    return "sqlite" if database_url.startswith("sqlite") else "postgresql"


@pytest.fixture(scope="session")
def settings(database_url: str) -> Settings:
    # A smaller connection budget than a server's: the session app serves one test at a
    # time, and test runs share the PostgreSQL server with each other.
    # No bundled demo MCP server: the session app would add its tools to `assistant`.
    return Settings(
        database_url=database_url,
        runner_enabled=False,
        database_max_connections=10,
        mcp_demo_server=False,
    )


@pytest.fixture(scope="session")
def app(settings: Settings) -> Litestar:
    return create_app(settings)


@pytest.fixture(scope="session")
async def session_factory(app: Litestar) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    engine = app.plugins.get(SQLAlchemyPlugin).config[0].get_engine()
    yield async_sessionmaker(engine, expire_on_commit=False)
    # The app's lifespan disposes the engine only if a test started it (`client`); a
    # session of `db`-only tests would otherwise keep its connections until exit.
    await engine.dispose()


async def _empty_all_tables(factory: async_sessionmaker[AsyncSession]) -> None:
    async with factory() as session:
        for table in reversed(metadata.sorted_tables):
            await session.execute(table.delete())
        await session.commit()


@asynccontextmanager
async def running_lifespan(app: Litestar) -> AsyncIterator[None]:
    """Run the app's startup/shutdown in one task of its own (pytest-asyncio tears
    fixtures down in another task, which anyio's cancel scopes refuse)."""
    started, stop = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        async with app.lifespan():
            started.set()
            await stop.wait()

    task = asyncio.create_task(hold())
    await asyncio.wait([task, asyncio.create_task(started.wait())], return_when="FIRST_COMPLETED")
    if task.done():
        task.result()
    try:
        yield
    finally:
        stop.set()
        await task


@pytest.fixture(scope="session")
async def _session_client(app: Litestar) -> AsyncIterator[httpx.AsyncClient]:
    # The app runs on the test's own event loop (Litestar's AsyncTestClient would run it
    # on a portal thread, and connections would then cross loops).
    async with running_lifespan(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            yield client


@pytest.fixture
async def client(
    _session_client: httpx.AsyncClient, session_factory: async_sessionmaker[AsyncSession]
) -> AsyncIterator[httpx.AsyncClient]:
    yield _session_client
    _session_client.headers.pop("authorization", None)
    await _empty_all_tables(session_factory)


@pytest.fixture
async def db(session_factory: async_sessionmaker[AsyncSession]) -> AsyncIterator[AsyncSession]:
    """A session for arranging rows and checking what the API stored."""
    async with session_factory() as session:
        for factory in (UserFactory, AgentFactory, ApiTokenFactory):
            factory.__async_session__ = session
        yield session


@dataclass
class ApiUser:
    user: User
    token: str
    agent: Agent

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


async def make_api_user(db: AsyncSession, **user_fields: object) -> ApiUser:
    user = UserFactory.build(**user_fields)
    db.add(user)
    await db.flush()
    token = new_token()
    db.add(ApiTokenFactory.build(user_id=user.id, token_hash=token_digest(token)))
    agent = AgentFactory.build(owner_id=user.id)
    db.add(agent)
    await db.commit()
    return ApiUser(user=user, token=token, agent=agent)


@pytest.fixture
async def alice(client: httpx.AsyncClient, db: AsyncSession) -> ApiUser:
    return await make_api_user(db)


@pytest.fixture
async def bob(client: httpx.AsyncClient, db: AsyncSession) -> ApiUser:
    return await make_api_user(db)
