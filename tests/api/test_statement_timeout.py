"""PostgreSQL: a statement the database does not answer within DATABASE_STATEMENT_TIMEOUT
fails as the database being unavailable (503 with Retry-After, nothing stored), and its
connection is dropped: the server stops waiting on it, and the next request is served.

Here the database is not silent but busy: another connection holds the thread's row lock,
so the message's write waits, as it would for an answer from a host cut off without a
reset (the case the timeout is for: tests/hosts cuts the link itself)."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from app.settings import Settings
from tests.api.support import assert_problem
from tests.api.test_connection_budget import serving
from tests.conftest import ApiUser

WAITING_FOR_LOCKS = text("SELECT count(*) FROM pg_locks WHERE NOT granted")


async def _waiting_for_locks(engine: AsyncEngine) -> int:
    async with engine.connect() as connection:
        return int((await connection.execute(WAITING_FOR_LOCKS)).scalar_one())


async def test_a_statement_left_unanswered_is_503_and_its_connection_dropped(
    settings: Settings, alice: ApiUser, dialect: str
) -> None:
    if dialect != "postgresql":
        pytest.skip("a client-side statement timeout: SQLite has no server to wait on")
    quick = replace(settings, database_statement_timeout_seconds=0.5)
    other = create_async_engine(settings.database_url, poolclass=NullPool)  # no timeout
    try:
        async with serving(quick) as (engine, client):
            dropped: list[object] = []
            event.listen(engine.sync_engine, "invalidate", lambda *args: dropped.append(args))
            body = {"agent_id": str(alice.agent.id)}
            thread = (await client.post("/api/threads", json=body, headers=alice.headers)).json()
            path = f"/api/threads/{thread['id']}/messages"

            async with other.connect() as holder:
                lock = text("SELECT id FROM threads WHERE id = :id FOR UPDATE")
                await holder.execute(lock, {"id": thread["id"]})
                async with asyncio.timeout(10):  # without the limit: until the lock goes
                    response = await client.post(
                        path, json={"content": "hi"}, headers=alice.headers
                    )
                assert_problem(response, 503)
                assert int(response.headers["retry-after"]) > 0
                assert len(dropped) == 1  # the pool will not hand that connection out again
                # and the database no longer holds the app's statement waiting on the lock
                for _ in range(50):
                    if await _waiting_for_locks(other) == 0:
                        break
                    await asyncio.sleep(0.05)
                assert await _waiting_for_locks(other) == 0
                await holder.rollback()

            messages = await client.get(path, headers=alice.headers)
            assert messages.json()["items"] == []  # the refused post stored nothing
            again = await client.post(path, json={"content": "hi"}, headers=alice.headers)
            assert again.status_code == 202  # stored, its run queued
    finally:
        await other.dispose()
