"""The runner's side of the run queue: claim, lease, finish, reap.

A run is the unit of work: queued -> running (under a lease the runner renews) ->
completed | failed | cancelled. Queueing, reading and cancelling a run is the threads
domain's (app/threads/runs.py). Every status change is announced after commit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any
from uuid import UUID

from sqlalchemy import (
    and_,
    any_,
    bindparam,
    delete,
    func,
    insert,
    or_,
    select,
    tuple_,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import clock, direct
from app.db.models import Run, RunStatus, ThreadMessage, runner_heartbeats
from app.lib.time import utcnow
from app.orchestrator.scheduling import queue_order
from app.threads import activity as cell
from app.threads import changes, repository
from app.threads import plan as plan_cell
from app.threads.fence import Fenced, Lease
from app.threads.records import StoredRun, stored_runs
from app.threads.writer import create_message_with, update_message

INTERRUPTED = cell.INTERRUPTED
_runs = Run.__table__


@lru_cache(maxsize=4)
def _claim_statement(postgres: bool, fair: bool = False):
    """Built once: composing this statement costs more than running it. Core, on the
    table's own columns: an ORM attribute anywhere in it makes the session run it as an
    ORM bulk UPDATE (2.5 times the CPU, and its cache key worked out again each time).
    `fair`: fairest first across users (queue_order.py), else oldest first."""
    if fair:
        candidates = queue_order.fairest_first(postgres=postgres)
    else:
        candidates = queue_order.oldest_first().limit(bindparam("slots"))
        if postgres:
            candidates = candidates.with_for_update(skip_locked=True)
    if postgres:
        # ANY(ARRAY(…)): the candidates are picked once, before the UPDATE, as a scalar
        # subquery would be (an IN semi-join is re-planned and, under concurrent
        # claimers, let all but one come back empty)
        chosen = _runs.c.id == any_(func.array(candidates.scalar_subquery()))
    else:
        chosen = _runs.c.id.in_(candidates.scalar_subquery())
    return (
        update(_runs)
        .where(chosen, _runs.c.status == RunStatus.QUEUED.value)
        .values(
            status=RunStatus.RUNNING.value,
            lease_owner=bindparam("owner"),
            lease_expires_at=bindparam("expires"),
            lease_epoch=_runs.c.lease_epoch + 1,  # the new lease's fencing token
            started_at=bindparam("now"),
            updated_at=bindparam("now"),  # the claim's own time, as started_at
        )
        .returning(*_runs.c)
    )


async def claim_runs(
    session: AsyncSession,
    owner: str,
    lease_seconds: float,
    *,
    postgres: bool,
    slots: int,
    fair: bool = False,
) -> list[StoredRun]:
    """Atomically move up to `slots` eligible runs to running under our lease, oldest
    first, or with `fair` fairest first across users (app/orchestrator/scheduling/queue_order.py).

    One UPDATE … WHERE status='queued' … RETURNING: on SQLite it holds the write lock; on
    PostgreSQL the candidates are picked FOR UPDATE SKIP LOCKED, so concurrent runners
    never claim one run twice, and a thread's later run is never eligible while an earlier
    one is queued or running (nor claimed beside it: eligibility is judged on the rows as
    they were before this statement). Fewer than `slots` back: nothing more is eligible.
    """
    now = clock.now()
    expires = now + timedelta(seconds=lease_seconds)
    params = {"owner": owner, "expires": expires, "now": now, "slots": slots}
    rows = await direct.execute(session, _claim_statement(postgres, fair), params)
    claimed = stored_runs(rows.mappings())
    claimed.sort(key=lambda run: (run.created_at, run.id))
    for run in claimed:
        changes.run_changed(session, run)
    return claimed


async def queue_positions(session: AsyncSession, most: int) -> list[UUID]:
    """The first `most` eligible queued runs, in the order the fair claim takes them."""
    rows = await session.execute(queue_order.positions_statement(), {"most": most})
    return [run_id for (run_id,) in rows]


async def queued_runs(session: AsyncSession, run_ids: list[UUID]) -> list[StoredRun]:
    """These runs as stored, those still queued."""
    rows = await session.execute(
        select(*_runs.c).where(_runs.c.id.in_(run_ids), _runs.c.status == RunStatus.QUEUED.value)
    )
    return stored_runs(rows.mappings())


async def claim_next_run(
    session: AsyncSession, owner: str, lease_seconds: float, *, postgres: bool
) -> StoredRun | None:
    """The next eligible run, claimed (or None): `claim_runs` for one slot."""
    claimed = await claim_runs(session, owner, lease_seconds, postgres=postgres, slots=1)
    return claimed[0] if claimed else None


async def still_queued(session: AsyncSession, run_ids: list[UUID]) -> set[UUID]:
    """Which of these runs still wait in the queue (not claimed, not cancelled)."""
    rows = await session.scalars(
        select(Run.id).where(Run.id.in_(run_ids), Run.status == RunStatus.QUEUED.value)
    )
    return set(rows)


async def renew_leases(
    session: AsyncSession, owner: str, leases: list[Lease], lease_seconds: float
) -> dict[UUID, bool]:
    """Extend our leases (each only while it is current: owner and epoch); answers
    {run_id: cancel_requested} for the runs still ours."""
    if not leases:
        return {}
    held = [(lease.run_id, lease.epoch) for lease in leases]
    rows = await session.execute(
        update(Run)
        .where(
            tuple_(Run.id, Run.lease_epoch).in_(held),
            Run.lease_owner == owner,
            Run.status == RunStatus.RUNNING.value,
        )
        .values(lease_expires_at=clock.now() + timedelta(seconds=lease_seconds))
        .returning(Run.id, Run.cancel_requested)
        .execution_options(synchronize_session=False)
    )
    return {row[0]: bool(row[1]) for row in rows}


async def close_open_activities(
    session: AsyncSession, run_id: UUID, *, error_type: str, error: str
) -> int:
    """End every in_progress / awaiting_approval tool activity of a run as failure, and
    its open plan cell, if any."""
    messages = await session.scalars(
        repository.run_tool_messages(run_id).execution_options(populate_existing=True)
    )
    closed = 0
    now = utcnow()
    for message in messages:
        if not cell.is_open(message.tool_activity):
            continue
        await update_message(
            session,
            message,
            tool_activity=cell.closed(
                message.tool_activity or {}, error_type=error_type, error=error, now=now
            ),
            content=cell.failure_content(error, error_type),
        )
        closed += 1
    return closed + await close_open_plan(session, run_id, error=error)


async def close_open_plan(session: AsyncSession, run_id: UUID, *, error: str) -> int:
    """A planner run that ended before its plan did: the plan cell says so (plan.py)."""
    messages = await session.scalars(
        repository.run_messages(run_id)
        .where(ThreadMessage.role == "assistant")
        .execution_options(populate_existing=True)
    )
    closed = 0
    for message in messages:
        if plan_cell.is_open(message.plan):
            await update_message(session, message, plan=plan_cell.closed(message.plan or {}, error))
            closed += 1
    return closed


async def finish_run(
    session: AsyncSession,
    lease: Lease,
    status: RunStatus,
    error: str | None = None,
    usage: Mapping[str, Any] | None = None,
) -> StoredRun:
    """End a run we hold, with its model usage (the `USAGE_COLUMNS`; None: no model call);
    `Fenced` if the lease is no longer ours (another process reaped it): nothing is written."""
    statement = _finish_statement(changes.run_end_values())
    params = _finish_params(lease, status, error, usage)
    rows = await direct.execute(session, statement, params)
    return _ended(session, lease, rows.mappings())


async def finish_run_with_answer(
    session: AsyncSession,
    lease: Lease,
    thread_id: UUID,
    answer: dict[str, Any],
    usage: Mapping[str, Any] | None = None,
) -> StoredRun:
    """End a run we hold as completed with its answer (the fields of a new assistant
    message): on PostgreSQL one statement, atomic by itself (writer.create_message_with).
    `Fenced` if the lease is no longer ours: neither the end nor the answer is written
    (on PostgreSQL the statement writes neither; otherwise the caller's transaction,
    left uncommitted, rolls the answer back)."""
    statement = _finish_statement(changes.run_end_values())
    params = _finish_params(lease, RunStatus.COMPLETED, usage=usage)
    _, ended = await create_message_with(session, thread_id, answer, statement, params)
    return _ended(session, lease, [] if ended is None else [ended])


# The run's usage is written by the UPDATE that ends it (one statement fewer a turn than
# an UPDATE of its own); prefixed, as the answer's INSERT shares the parameters.
USAGE_COLUMNS = ("input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens",
                 "cost_nanousd")  # fmt: skip


def _finish_params(
    lease: Lease,
    status: RunStatus,
    error: str | None = None,
    usage: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    params = {
        "run_id": lease.run_id,
        "owner": lease.owner,
        "epoch": lease.epoch,
        "status": status.value,
        "error": error,
        "now": utcnow(),
    }
    for column in USAGE_COLUMNS:
        params[f"usage_{column}"] = None if usage is None else usage[column]
    return params


def _ended(session: AsyncSession, lease: Lease, rows: Iterable[Mapping[str, Any]]) -> StoredRun:
    """The ended run, its change announced; `Fenced` if no row ended."""
    ended = stored_runs(rows)
    if not ended:
        raise Fenced(lease, "the run's end")
    changes.run_changed(session, ended[0])
    return ended[0]


# (hook values, statement): the hooks' values are module-level expressions, compared by
# identity (SQL expressions overload `==`); one entry per process in practice.
_finish_statements: list[tuple[dict[str, Any], Any]] = []
_FINISH_STATEMENTS_KEPT = 8


def _same_values(known: dict[str, Any], extra: dict[str, Any]) -> bool:
    return known.keys() == extra.keys() and all(known[k] is extra[k] for k in extra)


def _finish_statement(extra: dict[str, Any]) -> Any:
    """Built once per set of hook values: composing an UPDATE costs more than running it,
    on every turn."""
    for known, statement in _finish_statements:
        if _same_values(known, extra):
            return statement
    statement = _build_finish_statement(extra)
    _finish_statements.append((extra, statement))
    del _finish_statements[:-_FINISH_STATEMENTS_KEPT]
    return statement


def _build_finish_statement(extra: dict[str, Any]) -> Any:
    return (
        update(_runs)  # Core, as the claim (see there)
        .where(
            _runs.c.id == bindparam("run_id"),
            _runs.c.lease_owner == bindparam("owner"),
            _runs.c.lease_epoch == bindparam("epoch"),
            _runs.c.status == RunStatus.RUNNING.value,
        )
        .values(
            status=bindparam("status"),
            error=bindparam("error"),
            finished_at=bindparam("now"),
            lease_expires_at=None,
            # given, not left to the column's onupdate: inside a statement with another
            # UPDATE (finish_run_with_answer) both would bind a parameter `updated_at`
            updated_at=bindparam("now"),
            **{column: bindparam(f"usage_{column}") for column in USAGE_COLUMNS},
            **extra,
        )
        .returning(*_runs.c)
    )


async def running_lease_owners(session: AsyncSession) -> list[str]:
    rows = await session.scalars(
        select(Run.lease_owner).where(Run.status == RunStatus.RUNNING.value).distinct()
    )
    return [owner for owner in rows if owner]


async def expire_leases(session: AsyncSession, owners: list[str]) -> None:
    """Owners known to be dead: their leases end now, for the reaper to take."""
    await session.execute(
        update(Run)
        .where(Run.status == RunStatus.RUNNING.value, Run.lease_owner.in_(owners))
        .values(lease_expires_at=clock.now())
        .execution_options(synchronize_session=False)
    )


async def reap_expired_runs(session: AsyncSession) -> list[Run]:
    """Fail runs whose lease expired and close their open activities.

    An expired lease only says its runner stopped renewing it (it may have stopped, hung
    or lost the database), and the error says no more. The UPDATE … RETURNING claims each
    run for exactly one reaper.
    """
    return await _fail_running(
        session, Run.lease_expires_at <= clock.now(), LEASE_EXPIRED, INTERRUPTED
    )


# -- liveness: heartbeats and dead owners ----------------------------------------------
LEASE_EXPIRED = "Interrupted: the process running this run stopped renewing its lease."
OWNER_STOPPED = "Interrupted: the process running this run stopped."
OWNER_SILENT = "Interrupted: the process running this run stopped responding."


async def _fail_running(
    session: AsyncSession, condition: Any, error: str, activity_error: str
) -> list[Run]:
    """Fail the running runs matching `condition` (one UPDATE … RETURNING: each run is
    failed by exactly one caller) and close their open activities."""
    failed = list(
        await session.scalars(
            update(Run)
            .where(Run.status == RunStatus.RUNNING.value, condition)
            .values(
                status=RunStatus.FAILED.value,
                error=error,
                finished_at=utcnow(),
                lease_expires_at=None,
                lease_epoch=Run.lease_epoch + 1,  # its runner's writes are refused from now
                **changes.run_end_values(),
            )
            .returning(Run)
            .execution_options(synchronize_session=False, populate_existing=True)
        )
    )
    for run in failed:
        await close_open_activities(
            session, run.id, error_type="system_error", error=activity_error
        )
        changes.run_changed(session, run)
    return failed


async def reap_owners(session: AsyncSession, owners: list[str], error: str) -> list[Run]:
    """Fail the runs of owners known to be dead, lease or not, and forget their heartbeats."""
    if not owners:
        return []
    await session.execute(delete(runner_heartbeats).where(runner_heartbeats.c.owner.in_(owners)))
    return await _fail_running(session, Run.lease_owner.in_(owners), error, INTERRUPTED)


async def claim_silent_owners(session: AsyncSession, silent: dict[str, datetime]) -> list[str]:
    """Of the owners whose heartbeat was seen stuck at the given beat, those still stuck.

    Their rows are deleted only if the beat is still the one seen (an owner that beat
    meanwhile is alive after all), and each dead owner is claimed by exactly one caller.
    """
    if not silent:
        return []
    stuck = or_(
        *(
            and_(runner_heartbeats.c.owner == owner, runner_heartbeats.c.beat_at == beat_at)
            for owner, beat_at in silent.items()
        )
    )
    rows = await session.execute(
        delete(runner_heartbeats).where(stuck).returning(runner_heartbeats.c.owner)
    )
    return [owner for (owner,) in rows]


async def beat(session: AsyncSession, owner: str) -> None:
    """Renew this process's heartbeat row (re-created if a peer took us for dead)."""
    now = utcnow()
    renewed = await session.execute(
        update(runner_heartbeats).where(runner_heartbeats.c.owner == owner).values(beat_at=now)
    )
    if not renewed.rowcount:
        await session.execute(insert(runner_heartbeats).values(owner=owner, beat_at=now))


async def read_heartbeats(session: AsyncSession) -> dict[str, datetime]:
    rows = await session.execute(select(runner_heartbeats.c.owner, runner_heartbeats.c.beat_at))
    return {owner: beat_at for owner, beat_at in rows}


async def forget_heartbeat(session: AsyncSession, owner: str) -> None:
    await session.execute(delete(runner_heartbeats).where(runner_heartbeats.c.owner == owner))
