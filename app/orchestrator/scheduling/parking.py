"""A parked run outlives its process: back in the queue, taken up by the next claim.

A run is parked when everything it still has open waits for someone: cells awaiting the
user's approval or the phone's result, with no call running, no call being written, no
open plan and no specialist's call (a specialist's loop lives in memory only). Such a run
has nothing in flight to lose, so when its process stops (a deploy: `park_run` under its
lease) or dies (the reaper: `requeue_parked`), it goes back to `queued` instead of
failing. A runner claiming it finds its waiting cells and waits on them again
(app/orchestrator/loop/resume.py); the answer, given to any process, resumes the turn.

A request for input (`awaiting_input`) is a question inside a running tool call: that
call cannot outlive its process, so such a run is not parked (it fails as interrupted).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from sqlalchemy import bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import clock, direct
from app.db.models import Run, RunStatus, ThreadMessage
from app.threads import activity as cell
from app.threads import changes, repository
from app.threads import plan as plan_cell
from app.threads.fence import Fenced, Lease
from app.threads.records import StoredRun, stored_runs

# What a parked run may have open: waits that outlive any process.
PARKABLE = frozenset({cell.AWAITING_APPROVAL, cell.AWAITING_DEVICE})
_runs = Run.__table__


def parkable(messages: Sequence[ThreadMessage]) -> bool:
    """Whether a run with these (assistant and tool) messages may wait in the queue: at
    least one open cell, every open one a parkable wait of the run's own agent."""
    waiting = False
    for message in messages:
        if plan_cell.is_open(message.plan):
            return False
        activity = message.tool_activity
        if not cell.is_open(activity):
            continue
        if cell.status_of(activity) not in PARKABLE or _delegated(activity):
            return False
        waiting = True
    return waiting


def _delegated(activity: Mapping[str, Any] | None) -> bool:
    return bool(((activity or {}).get("input") or {}).get("delegated_by"))


async def run_is_parkable(session: AsyncSession, run_id: UUID) -> bool:
    messages = await session.scalars(
        repository.run_messages(run_id).execution_options(populate_existing=True)
    )
    return parkable(list(messages))


def _requeue(statement: Any, now: Any) -> Any:
    """Back to the queue, no one's: the next claim (any process's) takes it up."""
    return statement.values(
        status=RunStatus.QUEUED.value, lease_owner=None, lease_expires_at=None, updated_at=now
    )


_PARK = _requeue(
    update(_runs).where(
        _runs.c.id == bindparam("run_id"),
        _runs.c.lease_owner == bindparam("owner"),
        _runs.c.lease_epoch == bindparam("epoch"),
        _runs.c.status == RunStatus.RUNNING.value,
    ),
    bindparam("now"),
).returning(*_runs.c)


async def park_run(
    session: AsyncSession, lease: Lease, usage: Mapping[str, Any] | None
) -> StoredRun:
    """Put a run we hold back in the queue, with its model usage so far (None: no model
    call); `Fenced` if the lease is no longer ours."""
    params = {"run_id": lease.run_id, "owner": lease.owner, "epoch": lease.epoch}
    params["now"] = clock.now()
    statement = _PARK if usage is None else _PARK.values(**usage)
    rows = await direct.execute(session, statement, params)
    parked = stored_runs(rows.mappings())
    if not parked:
        raise Fenced(lease, "parking the run")
    changes.run_changed(session, parked[0])
    return parked[0]


async def requeue_parked(session: AsyncSession, condition: Any) -> list[Run]:
    """Of the running runs matching `condition` (their runner is gone), the parked ones
    back in the queue under a new epoch (the gone runner's writes are refused from now);
    each by exactly one caller (a conditional UPDATE). The others are left to be failed."""
    candidates = await session.scalars(
        select(Run.id).where(Run.status == RunStatus.RUNNING.value, condition)
    )
    requeued: list[Run] = []
    for run_id in list(candidates):
        if not await run_is_parkable(session, run_id):
            continue
        statement = _requeue(
            update(Run).where(Run.id == run_id, Run.status == RunStatus.RUNNING.value, condition),
            clock.now(),
        ).values(lease_epoch=Run.lease_epoch + 1)
        run = await session.scalar(
            statement.returning(Run).execution_options(
                synchronize_session=False, populate_existing=True
            )
        )
        if run is not None:
            changes.run_changed(session, run)
            changes.run_queued(session, run.id)
            requeued.append(run)
    return requeued
