"""Recall reads on the database lane (app/db/lane.py): a thread with its own event loop
and pool. The server's loop only hands a recall over: it answers other requests while
the lane works, a cancelled recall gives its connection back, and the lane goes with
the app."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from advanced_alchemy.extensions.litestar import SQLAlchemyPlugin
from litestar import Litestar
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app import create_app
from app.db import lane as db_lane
from app.settings import Settings
from tests.conftest import ApiUser, make_api_user, running_lifespan
from tests.memories.support import database_lane, embed_all, save, top_memory

BEVERAGE = "what beverage do I like"
COFFEE = "I drink my coffee black"


@contextmanager
def threads_reading(engine: AsyncEngine) -> Iterator[list[str]]:
    """The names of the threads `engine`'s statements are sent from."""
    names: list[str] = []

    def sent(*_: Any) -> None:
        names.append(threading.current_thread().name)

    event.listen(engine.sync_engine, "before_cursor_execute", sent)
    try:
        yield names
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", sent)


@pytest.fixture
async def lane(
    alice: ApiUser, session_factory: async_sessionmaker[AsyncSession]
) -> db_lane.DatabaseLane:
    """Alice's coffee remembered (and embedded); the lane recall reads on."""
    await save(session_factory, alice.user.id, COFFEE)
    await embed_all(session_factory)
    return await database_lane(session_factory)


@contextmanager
def lane_held(lane: db_lane.DatabaseLane) -> Iterator[None]:
    """The lane's loop busy (a callback that waits) until the block ends."""
    release = threading.Event()
    lane.loop.call_soon_threadsafe(release.wait, 10)
    try:
        yield
    finally:
        release.set()


async def test_a_recall_reads_on_the_lane_and_finds_by_meaning(
    client: httpx.AsyncClient, alice: ApiUser, lane: db_lane.DatabaseLane
) -> None:
    with threads_reading(lane.engine) as names:
        assert await top_memory(client, alice, BEVERAGE) == COFFEE
    assert names and set(names) == {"database-lane"}


async def test_the_server_answers_while_the_lane_is_busy(
    client: httpx.AsyncClient, alice: ApiUser, lane: db_lane.DatabaseLane
) -> None:
    with lane_held(lane):
        search = asyncio.create_task(top_memory(client, alice, BEVERAGE))
        listed = await client.get("/api/memories", headers=alice.headers)
        assert listed.status_code == 200
        assert [m["content"] for m in listed.json()["items"]] == [COFFEE]
        assert not search.done()  # it waits for the lane, not the server's loop
    assert await search == COFFEE


async def test_a_cancelled_recall_gives_its_lane_connection_back(
    client: httpx.AsyncClient, alice: ApiUser, lane: db_lane.DatabaseLane
) -> None:
    engine = lane.engine
    reading, release, given_back = threading.Event(), threading.Event(), threading.Event()

    def hold_the_first(*_: Any) -> None:  # on the lane's thread, its connection taken
        if not reading.is_set():
            reading.set()
            release.wait(10)

    event.listen(engine.sync_engine, "before_cursor_execute", hold_the_first)

    def gave_back(*_: Any) -> None:
        given_back.set()

    event.listen(engine.sync_engine, "checkin", gave_back)
    try:
        search = asyncio.create_task(top_memory(client, alice, BEVERAGE))
        assert await asyncio.to_thread(reading.wait, 10)
        assert engine.sync_engine.pool.checkedout() == 1
        search.cancel()
    finally:
        release.set()
        event.remove(engine.sync_engine, "before_cursor_execute", hold_the_first)
    await asyncio.gather(search, return_exceptions=True)
    assert search.cancelled()
    # The lane ends the cancelled recall on its own loop: the session closes.
    assert await asyncio.to_thread(given_back.wait, 10)
    event.remove(engine.sync_engine, "checkin", gave_back)
    assert engine.sync_engine.pool.checkedout() == 0
    assert await top_memory(client, alice, BEVERAGE) == COFFEE


@asynccontextmanager
async def own_app(settings: Settings, path: Path, connections: int) -> AsyncIterator[Litestar]:
    """An app of its own on a SQLite file of its own (no other app's lane reads it)."""
    url = f"sqlite+aiosqlite:///{path / 'own.sqlite3'}"
    app = create_app(replace(settings, database_url=url, database_max_connections=connections))
    async with running_lifespan(app):
        yield app


def sessions_of(app: Litestar) -> async_sessionmaker[AsyncSession]:
    engine = app.plugins.get(SQLAlchemyPlugin).config[0].get_engine()
    return async_sessionmaker(engine, expire_on_commit=False)


async def test_the_lane_goes_with_its_app(settings: Settings, tmp_path: Path) -> None:
    async with own_app(settings, tmp_path, 8) as app, sessions_of(app)() as session:
        lane = db_lane.serving(session)
        assert lane is not None and lane.thread.is_alive()
    assert not lane.thread.is_alive()
    async with sessions_of(app)() as session:
        assert db_lane.serving(session) is None


async def test_without_a_lane_recall_reads_on_the_server_loop(
    settings: Settings, tmp_path: Path
) -> None:
    """A budget below 8 connections has no lane: recall is the same, inline."""
    async with own_app(settings, tmp_path, 4) as app:
        sessions = sessions_of(app)
        async with sessions() as session:
            assert db_lane.serving(session) is None
        async with sessions() as session:
            user = await make_api_user(session)
        await save(sessions, user.user.id, COFFEE)
        await embed_all(sessions)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            assert await top_memory(client, user, BEVERAGE) == COFFEE
