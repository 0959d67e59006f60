"""Leases are fences: a runner that lost its run's lease (cut off from the database while
the reaper failed the run, or another runner took the lease) writes nothing more.

The partition is simulated deterministically: runner A's tool waits on a gate; meanwhile
the run's lease is taken from A in the database (the reaper fails the run after its lease
expired, or runner B takes the lease); then the gate opens and A's tool ends, as when a
partition heals. A's next write (the tool's result) is refused by the database, A stops
the run at once (no next model turn), logs one warning, and the metric counts it.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from uuid import UUID

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db import clock
from app.db.models import Run, RunStatus, Thread, ThreadMessage
from app.orchestrator.scheduling import leases as leases_module
from app.orchestrator.scheduling import reaper, runs
from app.threads import activity as cell
from app.threads import fence
from app.threads.fence import Lease
from app.threads.writer import create_message, update_message
from tests.conftest import make_api_user
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls
from tests.support.rows import new_run, new_threads
from tests.support.test_tools import GateTool


@pytest.fixture(scope="module")
def settings_overrides() -> dict:
    # A's worker neither renews nor reaps during a test (every 100 s at the soonest): the
    # lease is taken from A only by the test, and A learns of it by a refused write.
    return {"runner_poll_seconds": 60.0, "run_lease_seconds": 300.0}


def _fenced_count() -> float:
    return REGISTRY.get_sample_value("toolcells_fenced_total", {"holder": "run"}) or 0.0


async def _start_gated_run(api: OrchestratorApi) -> tuple[str, str, dict]:
    """A run of runner A whose tool waits on the gate: (thread id, run id, its cell)."""
    GateTool.gate = asyncio.Event()
    api.llm.script(ToolCalls(Call("test_gate", {"action": "wait"})), Text("Too late."))
    thread_id = await api.new_thread()
    response = await api.post(thread_id, "wait for the gate")
    assert response.status_code == 202, response.text
    waiting = await api.wait_activity("in_progress", "test_gate")
    return thread_id, response.json()["run"]["id"], waiting


async def _a_stops(api: OrchestratorApi) -> None:
    worker = api.app.state.run_worker
    async with asyncio.timeout(10), worker.finished:
        await worker.finished.wait_for(lambda: not worker.executions)


async def _last_seq(session_factory: async_sessionmaker[AsyncSession], thread_id: str) -> int:
    async with session_factory() as session:
        return await session.scalar(select(Thread.last_seq).where(Thread.id == UUID(thread_id)))


def _fence_warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        r for r in caplog.records if r.levelno >= logging.WARNING and "fenced" in r.getMessage()
    ]


async def test_a_runner_whose_run_was_reaped_writes_nothing_more(
    api: OrchestratorApi,
    session_factory: async_sessionmaker[AsyncSession],
    caplog: pytest.LogCaptureFixture,
) -> None:
    thread_id, run_id, _ = await _start_gated_run(api)
    owner = api.app.state.run_worker.deps.owner
    async with session_factory() as session:  # A's lease expired; a peer's reaper fails it
        # On the database's clock, the one the reaper reads (this host's may run behind it).
        await session.execute(
            update(Run).where(Run.id == UUID(run_id)).values(lease_expires_at=clock.now())
        )
        reaped = await reaper.reap_expired_runs(session)
        await session.commit()
    assert [r.id for r in reaped] == [UUID(run_id)]
    seq_after_reap, counted = await _last_seq(session_factory, thread_id), _fenced_count()

    caplog.set_level(logging.WARNING)
    GateTool.gate.set()  # the partition heals: A's tool ends and A writes its result
    await _a_stops(api)

    assert await _last_seq(session_factory, thread_id) == seq_after_reap  # nothing written
    run = await api.get_run(thread_id, run_id)
    assert run["status"] == "failed" and run["error"] == reaper.LEASE_EXPIRED
    [tool] = await api.tool_messages(thread_id)
    assert tool["tool_activity"]["status"] == "failure"  # as the reaper closed it
    assert tool["tool_activity"]["error"] == cell.INTERRUPTED
    assert [m["content"] for m in await api.messages(thread_id) if m["role"] == "assistant"] == [
        None  # the tool call's assistant message; no answer
    ]
    assert len(api.llm.requests) == 1  # A stopped: no next model turn
    [warning] = _fence_warnings(caplog)
    assert run_id in warning.getMessage() and owner in warning.getMessage()
    assert "epoch 1" in warning.getMessage()
    assert _fenced_count() == counted + 1


async def test_a_runner_whose_lease_went_to_another_is_refused_and_the_other_is_not(
    api: OrchestratorApi,
    session_factory: async_sessionmaker[AsyncSession],
    caplog: pytest.LogCaptureFixture,
) -> None:
    thread_id, run_id, waiting = await _start_gated_run(api)
    async with session_factory() as session:  # runner B takes the lease (a new epoch)
        taken = await session.execute(
            update(Run)
            .where(Run.id == UUID(run_id))
            .values(lease_owner="runner-b", lease_epoch=Run.lease_epoch + 1)
            .returning(Run.lease_epoch)
        )
        lease_b = Lease(UUID(run_id), "runner-b", taken.scalar_one())
        await session.commit()
    assert lease_b.epoch == 2

    async def b_takes_over() -> None:
        """B's writes, under B's lease: the tool's cell, then the run's end and answer."""
        fence.hold(lease_b)
        async with session_factory() as session:
            message = await session.get(ThreadMessage, UUID(waiting["id"]))
            result = {**message.tool_activity, "status": "success", "display_message": "B"}
            await update_message(session, message, tool_activity=result)
            await session.commit()
        GateTool.gate.set()  # now A's tool ends too; A's result is refused
        await _a_stops(api)
        async with session_factory() as session:
            answer = {"role": "assistant", "content": "B's answer.", "run_id": lease_b.run_id}
            ended = await runs.finish_run_with_answer(session, lease_b, UUID(thread_id), answer)
            await session.commit()
        assert ended.status == RunStatus.COMPLETED.value

    caplog.set_level(logging.WARNING)
    await asyncio.create_task(b_takes_over())  # a task of its own: B's lease is its context

    run = await api.get_run(thread_id, run_id)
    assert run["status"] == "completed"
    [tool] = await api.tool_messages(thread_id)
    assert tool["tool_activity"]["status"] == "success"
    assert tool["tool_activity"]["display_message"] == "B"  # not A's result
    assistant = [m["content"] for m in await api.messages(thread_id) if m["role"] == "assistant"]
    assert assistant == [None, "B's answer."]
    assert len(api.llm.requests) == 1
    assert len(_fence_warnings(caplog)) == 1


async def test_writes_under_a_lease_no_longer_current_are_refused_in_one_statement(
    db: AsyncSession, session_factory: async_sessionmaker[AsyncSession]
) -> None:
    """The writer itself: a create or update under a stale lease raises Fenced, changes
    nothing (not even the thread's seq), and one under the current lease goes through."""
    user = await make_api_user(db)
    [thread] = await new_threads(db, user)
    run = await new_run(
        db, thread, status=RunStatus.RUNNING.value, lease_owner="a", lease_epoch=3,
        lease_expires_at=clock.now() + timedelta(minutes=5),
    )  # fmt: skip
    await db.commit()
    current, stale = Lease(run.id, "a", 3), Lease(run.id, "a", 2)

    async def write(lease: Lease, content: str) -> None:
        fence.hold(lease)
        async with session_factory() as session:
            created = await create_message(
                session, thread.id, role="assistant", content=content, run_id=run.id
            )
            await update_message(session, created, content=content + "!")
            await session.commit()

    await asyncio.create_task(write(current, "mine"))
    with pytest.raises(fence.Fenced):
        await asyncio.create_task(write(stale, "stale"))
    async with session_factory() as session:
        contents = (
            await session.scalars(
                select(ThreadMessage.content).where(ThreadMessage.thread_id == thread.id)
            )
        ).all()
        last_seq = await session.scalar(select(Thread.last_seq).where(Thread.id == thread.id))
        count = await session.scalar(select(func.count()).select_from(ThreadMessage))
    assert contents == ["mine!"] and last_seq == 2 and count == 1


async def test_a_lease_that_expired_unreaped_is_not_held_nor_renewed(
    db: AsyncSession, session_factory: async_sessionmaker[AsyncSession]
) -> None:
    """A runner cut off for longer than its lease, back before any reaper took its run:
    its writes are refused and its renewal too (the run is the reaper's), while a lease
    still current renews."""
    user = await make_api_user(db)
    threads = await new_threads(db, user, count=2)
    lapsed, live = [
        await new_run(
            db, thread, status=RunStatus.RUNNING.value, lease_owner="a", lease_epoch=1,
            lease_expires_at=clock.now() + timedelta(seconds=seconds),
        )
        for thread, seconds in zip(threads, (-1, 300), strict=True)
    ]  # fmt: skip
    await db.commit()
    leases = [Lease(lapsed.id, "a", 1), Lease(live.id, "a", 1)]

    async def write(lease: Lease) -> None:
        fence.hold(lease)
        async with session_factory() as session:
            await create_message(
                session, lease_thread[lease.run_id], role="assistant", content="late",
                run_id=lease.run_id,
            )  # fmt: skip
            await session.commit()

    lease_thread = {lapsed.id: threads[0].id, live.id: threads[1].id}
    with pytest.raises(fence.Fenced):
        await asyncio.create_task(write(leases[0]))
    await asyncio.create_task(write(leases[1]))
    async with session_factory() as session:
        renewed = await leases_module.renew_leases(session, "a", leases, 30)
        await session.commit()
        written = (
            await session.scalars(
                select(ThreadMessage.run_id).where(ThreadMessage.run_id.in_(lease_thread))
            )
        ).all()
    assert renewed == {live.id: False}
    assert written == [live.id]
