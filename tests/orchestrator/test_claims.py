"""Claiming runs: concurrent claimers never take one run twice, and a thread's runs go
one at a time, in order (both dialects; PostgreSQL uses FOR UPDATE SKIP LOCKED)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db.models import Run, RunStatus, Thread, ThreadMessage
from app.db.reads import reading
from app.lib.time import utcnow
from app.orchestrator.scheduling import claims, reaper, runs
from app.threads.fence import Fenced, Lease
from app.threads.writer import create_message
from tests.conftest import ApiUser, make_api_user
from tests.support.rows import new_run, new_threads
from tests.support.statements import driver_statements, heads


async def _claim(factory: async_sessionmaker[AsyncSession], owner: str, postgres: bool):
    async with factory() as session:
        run = await claims.claim_next_run(session, owner, 30, postgres=postgres)
        await session.commit()
        return run.id if run else None


async def _user_with_threads(db: AsyncSession, count: int) -> tuple[ApiUser, list[Thread]]:
    user = await make_api_user(db)
    return user, await new_threads(db, user, count)


async def test_concurrent_claims_respect_threads_and_order(
    client: httpx.AsyncClient,
    db: AsyncSession,
    session_factory: async_sessionmaker[AsyncSession],
    dialect: str,
) -> None:
    user, threads = await _user_with_threads(db, 2)
    start = utcnow()
    line = [
        Run(
            thread_id=threads[0].id, agent_id=user.agent.id, created_at=start + timedelta(seconds=i)
        )
        for i in range(3)
    ]
    other = Run(thread_id=threads[1].id, agent_id=user.agent.id, created_at=start)
    db.add_all([*line, other])
    await db.commit()
    postgres = dialect == "postgresql"

    claimed = await asyncio.gather(
        *(_claim(session_factory, f"worker-{i}", postgres) for i in range(5))
    )
    assert sorted(str(c) for c in claimed if c) == sorted([str(line[0].id), str(other.id)])
    assert await _claim(session_factory, "late", postgres) is None  # thread 0 is busy

    async with session_factory() as session:
        first = await session.get(Run, line[0].id)
        lease = Lease(first.id, first.lease_owner, first.lease_epoch)
        await runs.finish_run(session, lease, RunStatus.COMPLETED)
        await session.commit()
    assert await _claim(session_factory, "next", postgres) == line[1].id


async def test_expired_leases_are_failed_and_their_cells_closed(
    client: httpx.AsyncClient,
    db: AsyncSession,
    session_factory: async_sessionmaker[AsyncSession],
) -> None:
    user = await make_api_user(db)
    [thread] = await new_threads(db, user)
    run = await new_run(
        db,
        thread,
        status=RunStatus.RUNNING.value,
        lease_owner="gone",
        lease_expires_at=utcnow() - timedelta(seconds=1),
    )
    for status in ("in_progress", "awaiting_approval", "success"):
        activity = {
            "id": f"call_{status}",
            "name": "tasks",
            "status": status,
            "started_at": utcnow().isoformat(),
        }
        await create_message(db, thread.id, role="tool", run_id=run.id, tool_activity=activity)
    await db.commit()

    async with session_factory() as session:
        reaped = await reaper.reap_expired_runs(session)
        await session.commit()
    assert [r.id for r in reaped] == [run.id]
    async with session_factory() as session:
        assert (await session.get(Run, run.id)).status == "failed"
        rows = await session.scalars(select(ThreadMessage).where(ThreadMessage.run_id == run.id))
        activities = {m.tool_activity["id"]: m.tool_activity for m in rows}
    assert activities["call_in_progress"]["error"] == "interrupted"
    assert activities["call_awaiting_approval"]["error_type"] == "system_error"
    assert activities["call_success"]["status"] == "success"
    assert all(a["status"] in ("success", "failure") for a in activities.values())
    async with session_factory() as session:
        assert await reaper.reap_expired_runs(session) == []  # reaped exactly once


async def test_one_claim_fills_every_free_slot_but_never_two_runs_of_a_thread(
    client: httpx.AsyncClient,
    db: AsyncSession,
    session_factory: async_sessionmaker[AsyncSession],
    dialect: str,
) -> None:
    user, threads = await _user_with_threads(db, 3)
    start = utcnow()
    queued = [
        Run(thread_id=thread.id, agent_id=user.agent.id, created_at=start + timedelta(seconds=i))
        for i, thread in enumerate([threads[0], threads[0], threads[1], threads[2]])
    ]
    db.add_all(queued)
    await db.commit()
    postgres = dialect == "postgresql"
    async with session_factory() as session:
        claimed = await claims.claim_runs(session, "batch", 30, postgres=postgres, slots=5)
        await session.commit()
    # the thread's second run waits for its first; the others are taken oldest first
    assert [run.id for run in claimed] == [queued[0].id, queued[2].id, queued[3].id]
    assert [run.lease_epoch for run in claimed] == [1, 1, 1]  # each claim raises the epoch
    async with session_factory() as session:
        assert await claims.still_queued(session, [r.id for r in queued]) == {queued[1].id}
        two = await claims.claim_runs(session, "batch", 30, postgres=postgres, slots=2)
    assert two == []


async def test_a_run_ends_with_its_answer_in_one_statement_and_a_lost_lease_writes_nothing(
    db: AsyncSession, session_factory: async_sessionmaker[AsyncSession], dialect: str
) -> None:
    user, [thread] = await _user_with_threads(db, 1)
    held = Run(thread_id=thread.id, agent_id=user.agent.id)
    lost = Run(thread_id=thread.id, agent_id=user.agent.id)
    db.add_all([held, lost])
    await db.commit()
    for run, owner in ((held, "me"), (lost, "someone else")):
        await db.execute(
            update(Run).where(Run.id == run.id).values(status="running", lease_owner=owner)
        )
    await db.commit()
    with driver_statements(session_factory.kw["bind"]) as statements:
        async with reading(session_factory)() as session:  # as RunnerDeps.write_alone
            answer = {"role": "assistant", "content": "Done.", "run_id": held.id}
            ended = await runs.finish_run_with_answer(
                session, Lease(held.id, "me", 0), thread.id, answer
            )
            await session.commit()
    assert ended is not None and ended.status == "completed" and ended.finished_at is not None
    if dialect == "postgresql":  # one statement, not even a BEGIN and COMMIT around it
        assert heads(statements) == ["WITH"]
    else:
        # the row below the thread's leaf, then the bump (which moves the leaf), the end
        row, bump, run = "INSERT thread_messages", "UPDATE threads", "UPDATE runs"
        assert heads(statements) == ["BEGIN", row, bump, run, "COMMIT"]

    answer = {"role": "assistant", "content": "Too late.", "run_id": lost.id}
    async with reading(session_factory)() as session:
        with pytest.raises(Fenced):
            await runs.finish_run_with_answer(session, Lease(lost.id, "me", 0), thread.id, answer)
    async with session_factory() as session:
        stored = (await session.scalars(select(ThreadMessage.content).where(
            ThreadMessage.thread_id == thread.id).order_by(ThreadMessage.seq))).all()  # fmt: skip
        status = await session.scalar(select(Run.status).where(Run.id == lost.id))
    assert stored == ["Done."]  # neither the answer nor the end of a run not ours
    assert status == "running"
