"""The end of a run its runner holds: finished (with its answer), its open cells closed.

A run is the unit of work: queued -> running (under a lease the runner renews) ->
completed | failed | cancelled (its end makes a branch switch it kept:
app/threads/pending_switch.py). Queueing, reading and cancelling a run is the threads
domain's (app/threads/runs.py); the runner claims runs (claims.py), renews their leases
(leases.py) and fails those of runners gone (reaper.py, heartbeats.py). Every status
change is announced after commit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from uuid import UUID

from sqlalchemy import bindparam, exists, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import clock, direct
from app.db.models import Run, RunStatus, Thread, ThreadMessage
from app.threads import activity as cell
from app.threads import changes
from app.threads.fence import Fenced, Lease
from app.threads.pending_switch import PENDING, after_run_end
from app.threads.records import StoredRun, stored_runs
from app.threads.writer import create_message_with

INTERRUPTED = cell.INTERRUPTED
_runs = Run.__table__


class NotAlone(Exception):
    """An end asked to be one statement by itself (`alone`: on PostgreSQL outside a
    transaction) needs more: it carries a branch switch, or its answer is a new version
    whose siblings must be recorded with it, or its lease is gone. Nothing was written:
    end it again in a transaction (which raises `Fenced` in the last case)."""


# What an end made alone asks of the run's row, checked by the statement itself: a switch
# kept for the run's end (pending_switch.py) would otherwise be made by later statements,
# each committed by itself, as would an answer's new-version bookkeeping.
_threads, _messages = Thread.__table__, ThreadMessage.__table__
_NO_SWITCH_KEPT = _runs.c.options[PENDING].is_(None)
_LEAF_OF_RUN = (
    select(_threads.c.current_leaf_id).where(_threads.c.id == _runs.c.thread_id).correlate(_runs)
)
_LEAF_UNANSWERED = ~exists().where(
    _messages.c.thread_id == _runs.c.thread_id,
    _messages.c.parent_id == _LEAF_OF_RUN.scalar_subquery(),
)
_IN_A_TRANSACTION: tuple[Any, ...] = ()
_ALONE_END = (_NO_SWITCH_KEPT,)
_ALONE_ANSWER = (_NO_SWITCH_KEPT, _LEAF_UNANSWERED)


async def finish_run(
    session: AsyncSession,
    lease: Lease,
    status: RunStatus,
    error: str | None = None,
    usage: Mapping[str, Any] | None = None,
    *,
    alone: bool = False,
) -> StoredRun:
    """End a run we hold, with its model usage (the `USAGE_COLUMNS`; None: no model call);
    `Fenced` if the lease is no longer ours (another process reaped it): nothing is written.
    `alone`: the end must be its one statement (else `NotAlone`, nothing written)."""
    statement = _finish_statement(
        changes.run_end_values(), _ALONE_END if alone else _IN_A_TRANSACTION
    )
    params = _finish_params(lease, status, error, usage)
    rows = await direct.execute(session, statement, params)
    ended = _ended(session, lease, rows.mappings(), alone)
    await after_run_end(session, ended)
    return ended


async def finish_run_with_answer(
    session: AsyncSession,
    lease: Lease,
    thread_id: UUID,
    answer: dict[str, Any],
    usage: Mapping[str, Any] | None = None,
    *,
    alone: bool = False,
) -> StoredRun:
    """End a run we hold as completed with its answer (the fields of a new assistant
    message): on PostgreSQL one statement, atomic by itself (writer.create_message_with).
    `Fenced` if the lease is no longer ours: neither the end nor the answer is written
    (on PostgreSQL the statement writes neither; otherwise the caller's transaction,
    left uncommitted, rolls the answer back). `alone`: as `finish_run`'s."""
    statement = _finish_statement(
        changes.run_end_values(), _ALONE_ANSWER if alone else _IN_A_TRANSACTION
    )
    params = _finish_params(lease, RunStatus.COMPLETED, usage=usage)
    _, row = await create_message_with(session, thread_id, answer, statement, params)
    ended = _ended(session, lease, [] if row is None else [row], alone)
    await after_run_end(session, ended)
    return ended


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
        "now": clock.now(),  # the database clock, as the claim stamped started_at
    }
    for column in USAGE_COLUMNS:
        params[f"usage_{column}"] = None if usage is None else usage[column]
    return params


def _ended(
    session: AsyncSession, lease: Lease, rows: Iterable[Mapping[str, Any]], alone: bool
) -> StoredRun:
    """The ended run, its change announced; `Fenced` (`NotAlone`) if no row ended."""
    ended = stored_runs(rows)
    if not ended:
        raise NotAlone() if alone else Fenced(lease, "the run's end")
    changes.run_changed(session, ended[0])
    return ended[0]


# (hook values, conditions, statement): both module-level expressions, compared by
# identity (SQL expressions overload `==`); a few entries per process in practice.
_finish_statements: list[tuple[dict[str, Any], tuple[Any, ...], Any]] = []
_FINISH_STATEMENTS_KEPT = 8


def _same_values(known: dict[str, Any], extra: dict[str, Any]) -> bool:
    return known.keys() == extra.keys() and all(known[k] is extra[k] for k in extra)


def _finish_statement(extra: dict[str, Any], conditions: tuple[Any, ...]) -> Any:
    """Built once per set of hook values and conditions: composing an UPDATE costs more
    than running it, on every turn."""
    for known, asked, statement in _finish_statements:
        if asked is conditions and _same_values(known, extra):
            return statement
    statement = _build_finish_statement(extra).where(*conditions)
    _finish_statements.append((extra, conditions, statement))
    del _finish_statements[:-_FINISH_STATEMENTS_KEPT]
    return statement


def _build_finish_statement(extra: dict[str, Any]) -> Any:
    return (
        update(_runs)  # Core, as the claim (claims.py: see there)
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
