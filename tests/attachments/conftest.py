"""An app whose attachments go to a temporary directory, with small limits to reach."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar import Litestar
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app import create_app
from app.settings import Settings
from tests.conftest import ApiUser, _empty_all_tables, make_api_user, running_lifespan

LIMITS = dict(
    attachment_image_max_bytes=2 * 1024 * 1024,
    attachment_text_max_bytes=64 * 1024,
    user_attachment_quota_bytes=5 * 1024 * 1024,
)


@pytest.fixture(scope="module")
def attachments_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("attachments")


@asynccontextmanager
async def files_app_with(database_url: str, **storage: Any) -> AsyncIterator[Litestar]:
    """The app with the test limits and no runner, keeping files as `storage` says."""
    settings = Settings(
        database_url=database_url,
        runner_enabled=False,
        database_max_connections=5,
        mcp_demo_server=False,
        **LIMITS,
        **storage,
    )
    app = create_app(settings)
    async with running_lifespan(app):
        yield app


@asynccontextmanager
async def phone_of(
    app: Litestar, session_factory: async_sessionmaker[AsyncSession]
) -> AsyncIterator[httpx.AsyncClient]:
    """A client of `app`; the tables emptied after it."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield client
    await _empty_all_tables(session_factory)


@pytest.fixture(scope="module")
async def files_app(database_url: str, attachments_dir: Path) -> AsyncIterator[Litestar]:
    async with files_app_with(database_url, attachments_dir=str(attachments_dir)) as app:
        yield app


@pytest.fixture
async def files(
    files_app: Litestar, session_factory: async_sessionmaker[AsyncSession]
) -> AsyncIterator[httpx.AsyncClient]:
    async with phone_of(files_app, session_factory) as client:
        yield client


@pytest.fixture
async def ann(files: httpx.AsyncClient, db: AsyncSession) -> ApiUser:
    return await make_api_user(db)


@pytest.fixture
async def ben(files: httpx.AsyncClient, db: AsyncSession) -> ApiUser:
    return await make_api_user(db)
