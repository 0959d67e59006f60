"""The order in which queued runs get runner slots: oldest first, or fairest first.

A run is eligible when it is first in its thread's line with nothing running there (a
thread's runs go one at a time, in order). While every eligible run gets a slot at once
the order does not matter, and the claim takes them oldest first (the cheap statement).
When there are more eligible runs than free slots, the claim goes fairest first: each
run is ranked by its owner's runs running now plus its place among its owner's eligible
runs; on a tie the owner with fewer runs waiting goes first (the one just served has as
few running as the others, but more waiting), then the older run. A user who queued 500
runs thus gets a slot in turn with every other user, never the whole queue before them. The rank is worked out in SQL over
the whole table, so every process claims from the same order, on both dialects; the
same order gives a waiting run its `position` (the `run` frame `queued`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from sqlalchemy import and_, bindparam, exists, func, or_, select

from app.db.models import Run, RunStatus, Thread

_runs = Run.__table__
_threads = Thread.__table__
QUEUED, RUNNING = RunStatus.QUEUED.value, RunStatus.RUNNING.value


def first_in_line(runs: Any) -> Any:
    """`runs` (the table or an alias) is queued, first in its thread's line, and nothing
    runs in its thread."""
    run, other = runs.c, _runs.alias("other").c
    ahead = exists().where(
        other.thread_id == run.thread_id,
        or_(
            other.status == RUNNING,
            and_(
                other.status == QUEUED,
                or_(
                    other.created_at < run.created_at,
                    and_(other.created_at == run.created_at, other.id < run.id),
                ),
            ),
        ),
    )
    return and_(run.status == QUEUED, ~ahead)


def oldest_first() -> Any:
    """The eligible runs' ids, oldest first."""
    run = _runs.c
    return select(run.id).where(first_in_line(_runs)).order_by(run.created_at, run.id)


def _ranked() -> Any:
    """Eligible runs with their `turn` (their owner's running runs + their place among
    the owner's eligible runs, 1 for the oldest) and `backlog` (the owner's eligible runs)."""
    run = _runs.c
    busy_run, busy_thread = _runs.alias("busy_run"), _threads.alias("busy_thread")
    busy = (
        select(busy_thread.c.owner_id, func.count().label("running"))
        .select_from(busy_run.join(busy_thread, busy_thread.c.id == busy_run.c.thread_id))
        .where(busy_run.c.status == RUNNING)
        .group_by(busy_thread.c.owner_id)
        .subquery("busy")
    )
    owner = _threads.c.owner_id
    place = func.row_number().over(partition_by=owner, order_by=(run.created_at, run.id))
    turn = place + func.coalesce(busy.c.running, 0)
    backlog = func.count().over(partition_by=owner)
    return (
        select(run.id, run.created_at, turn.label("turn"), backlog.label("backlog"))
        .select_from(
            _runs.join(_threads, _threads.c.id == run.thread_id).outerjoin(
                busy, busy.c.owner_id == owner
            )
        )
        .where(first_in_line(_runs))
        .subquery("ranked")
    )


def _fairest(ranked: Any) -> tuple[Any, ...]:
    return (ranked.c.turn, ranked.c.backlog, ranked.c.created_at, ranked.c.id)


def fairest_first(*, postgres: bool) -> Any:
    """The eligible runs' ids, fairest first, at most `:slots`; on PostgreSQL locked FOR
    UPDATE SKIP LOCKED (on the runs' rows alone: the ranking's window and grouping
    cannot be locked), so concurrent claimers skip each other's picks."""
    ranked = _ranked()
    if not postgres:
        return select(ranked.c.id).order_by(*_fairest(ranked)).limit(bindparam("slots"))
    pick = _runs.alias("pick")
    return (
        select(pick.c.id)
        .join(ranked, ranked.c.id == pick.c.id)
        .where(pick.c.status == QUEUED)
        .order_by(*_fairest(ranked))
        .limit(bindparam("slots"))
        .with_for_update(skip_locked=True, of=pick)
        .correlate(None)
    )


@lru_cache(maxsize=1)
def positions_statement() -> Any:
    """The first `:most` eligible runs' ids in the order the claim takes them."""
    ranked = _ranked()
    return select(ranked.c.id).order_by(*_fairest(ranked)).limit(bindparam("most"))
