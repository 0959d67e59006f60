"""A host cut off between a write and its COMMIT stalls no other host (PostgreSQL).

Its transaction stays open on the server with its run row locked FOR SHARE (a fenced
write, app/threads/fence.py) and, maybe, its heartbeat row locked. The other hosts'
reapers skip that run and bound their lock waits, so they go on reaping everything else;
the run is taken once the server drops the silent transaction (the app sets
`idle_in_transaction_session_timeout` on its connections).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

from app.db import clock
from app.db.config import pool_options
from app.db.models import Run, RunStatus, runner_heartbeats
from app.orchestrator.scheduling.heartbeats import beat, read_heartbeats
from app.orchestrator.scheduling.reaper import Reaper
from app.settings import Settings
from tests.conftest import make_api_user
from tests.support.rows import new_run, new_threads

# A bound on the reaper's rounds: a reaper waiting on the cut host's lock would hang.
ROUND_BOUND_SECONDS = 20


@pytest.fixture(autouse=True)
def _postgresql_only(dialect: str) -> None:
    if dialect != "postgresql":
        pytest.skip("SQLite has one writer at a time and no server-side sessions to drop")


class Transactions:
    """The reaper's database (app/orchestrator/scheduling/runner_db.py): one committed
    transaction per call."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.read_sessions = sessions

    async def write(self, work: Any) -> Any:
        async with self.read_sessions() as session:
            result = await work(session)
            await session.commit()
            return result

    write_alone = write


@pytest.fixture
async def cut_host(
    session_factory: async_sessionmaker[AsyncSession],
) -> AsyncIterator[AsyncSession]:
    """The cut host's connection, its transaction open (rolled back at the end)."""
    async with session_factory() as session:
        yield session
        await session.rollback()


async def _expired_runs(db: AsyncSession, owners: list[str]) -> list[Run]:
    user = await make_api_user(db)
    threads = await new_threads(db, user, count=len(owners))
    expired = clock.now() - timedelta(seconds=1)
    runs = [
        await new_run(db, thread, status=RunStatus.RUNNING.value, lease_owner=owner,
                      lease_epoch=1, lease_expires_at=expired)
        for thread, owner in zip(threads, owners, strict=True)
    ]  # fmt: skip
    await db.commit()
    return runs


async def _statuses(sessions: async_sessionmaker[AsyncSession], runs: list[Run]) -> list[str]:
    async with sessions() as session:
        found = dict((await session.execute(select(Run.id, Run.status))).tuples().all())
    return [found[run.id] for run in runs]


async def test_the_reaper_skips_a_run_a_cut_host_holds_locked_and_reaps_the_rest(
    db: AsyncSession,
    session_factory: async_sessionmaker[AsyncSession],
    settings: Settings,
    cut_host: AsyncSession,
) -> None:
    held, gone = await _expired_runs(db, ["cut-host", "dead-host"])
    await cut_host.execute(  # the cut host's fenced write, its COMMIT lost in the cut
        select(Run.id).where(Run.id == held.id).with_for_update(read=True)
    )
    reaper = Reaper(settings, Transactions(session_factory))

    async with asyncio.timeout(ROUND_BOUND_SECONDS):
        await reaper.reap()
    assert await _statuses(session_factory, [held, gone]) == ["running", "failed"]

    await cut_host.rollback()  # the server dropped the cut host's transaction
    async with asyncio.timeout(ROUND_BOUND_SECONDS):
        await reaper.reap()
    assert await _statuses(session_factory, [held, gone]) == ["failed", "failed"]


async def test_a_silent_peer_whose_heartbeat_row_is_locked_stops_no_heartbeat(
    db: AsyncSession,
    session_factory: async_sessionmaker[AsyncSession],
    settings: Settings,
    cut_host: AsyncSession,
) -> None:
    """The silent peer's last write was its heartbeat: reaping it waits at most the lock
    bound and fails that round, this host beats meanwhile, and the round after the
    server dropped the peer's transaction fails the peer's run."""
    [run] = await _expired_runs(db, ["silent-peer"])
    async with session_factory() as session:
        await beat(session, "silent-peer")
        await session.commit()
        [seen] = [at for owner, at in (await read_heartbeats(session)).items()
                  if owner == "silent-peer"]  # fmt: skip
    await beat(cut_host, "silent-peer")  # its beat's COMMIT lost in the cut
    reaper = Reaper(settings, Transactions(session_factory))
    await reaper.start()
    try:
        reaper.reap_silent({"silent-peer": seen})  # returns at once
        async with session_factory() as session:  # this host's beat goes through
            async with asyncio.timeout(ROUND_BOUND_SECONDS):
                await beat(session, "healthy-host")
                await session.commit()
        await cut_host.rollback()
        for _ in range(ROUND_BOUND_SECONDS * 10):
            if await _statuses(session_factory, [run]) == ["failed"]:
                break
            reaper.reap_silent({"silent-peer": seen})  # the next heartbeat tells again
            await asyncio.sleep(0.1)
        assert await _statuses(session_factory, [run]) == ["failed"]
    finally:
        await reaper.stop()
    async with session_factory() as session:
        owners = set(await session.scalars(select(runner_heartbeats.c.owner)))
    assert "silent-peer" not in owners and "healthy-host" in owners


async def test_the_server_drops_a_transaction_left_open_and_silent(settings: Settings) -> None:
    """The app's connections carry `idle_in_transaction_session_timeout`: a session that
    went silent inside a transaction is ended by the server, its locks released."""
    short = dataclasses.replace(settings, database_idle_in_transaction_timeout_seconds=0.3)
    engine = create_async_engine(short.database_url, **pool_options(short, 1))
    try:
        async with engine.connect() as connection:
            shown = await connection.scalar(text("SHOW idle_in_transaction_session_timeout"))
            assert shown == "300ms"
            await connection.execute(text("SELECT 1"))  # in the transaction SHOW began
            await asyncio.sleep(1.0)  # silent inside the transaction, past the timeout
            with pytest.raises(DBAPIError, match="connection is closed"):
                await connection.execute(text("SELECT 1"))
    finally:
        await engine.dispose()
