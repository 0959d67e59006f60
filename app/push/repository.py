"""Push queries: statement builders the sender, fan-out and Live Activities execute, and
the one insert of delivery rows."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from functools import lru_cache
from typing import Any
from uuid import UUID

from sqlalchemy import Select, bindparam, delete, exists, or_, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession
from uuid_utils.compat import uuid7

from app.db.models import (
    Agent,
    Device,
    LiveActivity,
    LiveActivityStartToken,
    PushDelivery,
    PushEvent,
    Run,
    Task,
    Thread,
    ThreadMessage,
)
from app.db.upsert import dialect_insert

BATCH = 50


# Every key of a delivery row: rows are inserted many at a time (one executemany), and
# SQLAlchemy takes the columns of the first row for all of them, so a row missing a key
# another row has (an alert has no `live_activity_id`, a Live Activity no `device_id`)
# fails the whole statement.
_OPTIONAL_DELIVERY_KEYS: dict[str, Any] = {
    "device_id": None,
    "live_activity_id": None,
    "collapse_id": None,
    "last_error": None,
    "sent_at": None,
}


def pending_delivery(now: datetime, **fields: Any) -> dict[str, Any]:
    """A `push_deliveries` row to insert, due now (fields: token, payload, topic, …), with
    the full key set whatever its kind."""
    return {
        "id": uuid7(),
        "status": "pending",
        "attempts": 0,
        "next_attempt_at": now,
        "created_at": now,
        "updated_at": now,
        **_OPTIONAL_DELIVERY_KEYS,
        **fields,
    }


async def insert_deliveries(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    """Insert rows made by `pending_delivery`; one per (event_key, token) ever, so an event
    fanned out twice (a retry, two processes) reaches each token once."""
    if rows:
        insert = dialect_insert(session, PushDelivery.__table__)
        await session.execute(
            insert.on_conflict_do_nothing(index_elements=["event_key", "token"]), rows
        )


def due_events(postgres: bool, now: datetime, limit: int) -> Select[tuple[PushEvent]]:
    """The oldest events due for fan-out (not fanned out, not dead-lettered, not waiting
    for a retry); on PostgreSQL taken by one process (FOR UPDATE SKIP LOCKED), on SQLite
    the write lock serialises the fan-out."""
    query = (
        select(PushEvent)
        .where(
            PushEvent.fanned_out_at.is_(None),
            PushEvent.dead_at.is_(None),
            or_(PushEvent.next_attempt_at.is_(None), PushEvent.next_attempt_at <= now),
        )
        .order_by(PushEvent.created_at, PushEvent.id)
        .limit(limit)
    )
    return query.with_for_update(skip_locked=True) if postgres else query


def mark_fanned_out(event_ids: list[UUID], now: datetime) -> Any:
    return (
        update(PushEvent)
        .where(PushEvent.id.in_(event_ids))
        .values(fanned_out_at=now)
        .execution_options(synchronize_session=False)
    )


# Evaluated inside the UPDATE that ends a run (correlated to that `runs` row): true if a
# Live Activity follows the thread, or its owner has a device and no live socket on it in
# any process (the fan-out checks this process's sockets again; an alert is never sent to
# a user watching). False costs the turn nothing more. Plain SQL (both dialects) because
# the runner executes it on every turn and SQLAlchemy would rebuild the cache key of an
# expression tree this size each time (~0.6 ms); CURRENT_TIMESTAMP compares with
# DateTimeUTC as stored on both (UTC; text 'YYYY-MM-DD HH:MM:SS[.ffffff]' on SQLite).
END_NEEDS_PUSH = text(
    """(
    EXISTS (SELECT 1 FROM live_activities AS la
            WHERE la.thread_id = runs.thread_id AND la.ended_at IS NULL)
    OR EXISTS (SELECT 1 FROM threads AS t JOIN devices AS d ON d.user_id = t.owner_id
               WHERE t.id = runs.thread_id
                 AND NOT EXISTS (SELECT 1 FROM push_presence AS p
                                 WHERE p.user_id = t.owner_id AND p.thread_id = t.id
                                   AND p.expires_at > CURRENT_TIMESTAMP))
)"""
)


def due_runs(postgres: bool) -> Select[tuple[Run]]:
    """Ended runs whose end is still to be fanned out (each taken by one process)."""
    query = select(Run).where(Run.push_due).order_by(Run.finished_at).limit(BATCH)
    return query.with_for_update(skip_locked=True) if postgres else query


def clear_push_due(run_ids: list[UUID]) -> Any:
    return (
        update(Run)
        .where(Run.id.in_(run_ids))
        .values(push_due=None)
        .execution_options(synchronize_session=False)
    )


@lru_cache(maxsize=2)
def claim_deliveries(postgres: bool) -> Any:
    """Due deliveries, claimed by pushing their next attempt past a lease: a process that
    dies mid-send leaves them to be retried once the lease passes."""
    due = (
        select(PushDelivery.id)
        .where(PushDelivery.status == "pending", PushDelivery.next_attempt_at <= bindparam("now"))
        .order_by(PushDelivery.next_attempt_at)
        .limit(BATCH)
    )
    if postgres:
        due = due.with_for_update(skip_locked=True)
    return (
        update(PushDelivery)
        .where(PushDelivery.id.in_(due.scalar_subquery()), PushDelivery.status == "pending")
        .values(next_attempt_at=bindparam("lease"))
        .returning(PushDelivery)
        .execution_options(synchronize_session=False, populate_existing=True)
    )


def record_outcome(delivery_id: UUID, claim: datetime, values: dict[str, Any]) -> Any:
    """A send's outcome, written only while the claim is still this sender's: the
    delivery pending, its next attempt still the claim's lease (a fence: after a lapse
    another process may have claimed it again)."""
    return _still_claimed([delivery_id], claim).values(**values)


def record_sent(delivery_ids: list[UUID], claim: datetime, now: datetime) -> Any:
    """Deliveries APNs accepted, recorded at once, each fenced as in `record_outcome`;
    RETURNING names those written (a missing one's claim was taken over)."""
    values = {"status": "sent", "sent_at": now, "attempts": PushDelivery.attempts + 1,
              "last_error": None}  # fmt: skip
    return _still_claimed(delivery_ids, claim).values(**values).returning(PushDelivery.id)


def _still_claimed(delivery_ids: list[UUID], claim: datetime) -> Any:
    """An UPDATE of the deliveries still this claim's: pending, their next attempt still
    the claim's lease (the fence of every outcome written)."""
    return (
        update(PushDelivery)
        .where(
            PushDelivery.id.in_(delivery_ids),
            PushDelivery.status == "pending",
            PushDelivery.next_attempt_at == claim,
        )
        .execution_options(synchronize_session=False)
    )


def thread_heading(thread_id: UUID) -> Select[Any]:
    """(owner_id, title, agent name) of a thread: the alert's title."""
    return (
        select(Thread.owner_id, Thread.title, Agent.name, Thread.last_seq)
        .join(Agent, Agent.id == Thread.agent_id)
        .where(Thread.id == thread_id)
    )


def user_devices(user_id: UUID) -> Select[tuple[Device]]:
    return select(Device).where(Device.user_id == user_id)


def users_devices(user_ids: Iterable[UUID]) -> Select[tuple[Device]]:
    return select(Device).where(Device.user_id.in_(list(user_ids)))


def tasks(task_ids: list[UUID]) -> Select[tuple[Task]]:
    return select(Task).where(Task.id.in_(task_ids))


def run_answer(run_id: UUID) -> Select[tuple[ThreadMessage]]:
    """The run's last assistant message with text: its answer."""
    return (
        select(ThreadMessage)
        .where(
            ThreadMessage.run_id == run_id,
            ThreadMessage.role == "assistant",
            ThreadMessage.content.is_not(None),
        )
        .order_by(ThreadMessage.seq.desc())
        .limit(1)
    )


def run_of(run_id: UUID) -> Select[tuple[Run]]:
    return select(Run).where(Run.id == run_id)


def current_run(thread_id: UUID) -> Select[tuple[Run]]:
    """The thread's latest run (the one running or next, or the last to end)."""
    return select(Run).where(Run.thread_id == thread_id).order_by(Run.created_at.desc()).limit(1)


def open_activities(thread_ids: list[UUID]) -> Select[tuple[LiveActivity]]:
    return select(LiveActivity).where(
        LiveActivity.thread_id.in_(thread_ids), LiveActivity.ended_at.is_(None)
    )


def activities_of_run(thread_id: UUID, run_id: UUID) -> Select[tuple[LiveActivity]]:
    """Open Live Activities following this run, or the thread's next run (this one)."""
    return open_activities([thread_id]).where(
        (LiveActivity.run_id == run_id) | LiveActivity.run_id.is_(None)
    )


def activity_by_token(push_token: str) -> Select[tuple[LiveActivity]]:
    return select(LiveActivity).where(LiveActivity.push_token == push_token)


def user_activities(user_id: UUID, *, include_ended: bool, limit: int) -> Select[Any]:
    """A user's Live Activities, newest first (open ones only unless `include_ended`)."""
    query = select(LiveActivity).where(LiveActivity.user_id == user_id)
    if not include_ended:
        query = query.where(LiveActivity.ended_at.is_(None))
    return query.order_by(LiveActivity.created_at.desc(), LiveActivity.id.desc()).limit(limit)


def owned_activity(user_id: UUID, activity_id: UUID) -> Select[tuple[LiveActivity]]:
    """The user's own activity: another user's is not found (never told apart)."""
    return select(LiveActivity).where(
        LiveActivity.id == activity_id, LiveActivity.user_id == user_id
    )


def forget_activity(activity_id: UUID) -> list[Any]:
    """An unregistered activity and its queued pushes."""
    return [
        delete(PushDelivery).where(PushDelivery.live_activity_id == activity_id),
        delete(LiveActivity).where(LiveActivity.id == activity_id),
    ]


START_TOKENS_PER_USER = 20  # one per app install; older ones are dropped


def start_token_by_token(token: str) -> Select[tuple[LiveActivityStartToken]]:
    return select(LiveActivityStartToken).where(LiveActivityStartToken.token == token)


def owned_start_token(user_id: UUID, token_id: UUID) -> Select[tuple[LiveActivityStartToken]]:
    return select(LiveActivityStartToken).where(
        LiveActivityStartToken.id == token_id, LiveActivityStartToken.user_id == user_id
    )


def user_start_tokens(user_id: UUID) -> Select[tuple[LiveActivityStartToken]]:
    return select(LiveActivityStartToken).where(LiveActivityStartToken.user_id == user_id)


def start_tokens_beyond_limit(user_id: UUID) -> Any:
    """A user's start tokens past the newest START_TOKENS_PER_USER (reinstalls leave old
    ones behind)."""
    kept = (
        select(LiveActivityStartToken.id)
        .where(LiveActivityStartToken.user_id == user_id)
        .order_by(LiveActivityStartToken.updated_at.desc(), LiveActivityStartToken.id.desc())
        .limit(START_TOKENS_PER_USER)
    )
    return delete(LiveActivityStartToken).where(
        LiveActivityStartToken.user_id == user_id, LiveActivityStartToken.id.not_in(kept)
    )


def forget_start_token(token: str) -> Any:
    return delete(LiveActivityStartToken).where(LiveActivityStartToken.token == token)


def runs_to_start(thread_ids: list[UUID]) -> Select[Any]:
    """(run, owner_id, title, agent name) of the active runs of these threads that no
    open Live Activity follows, whose owner registered a push-to-start token."""
    followed = exists().where(
        LiveActivity.thread_id == Run.thread_id, LiveActivity.ended_at.is_(None)
    )
    startable = exists().where(LiveActivityStartToken.user_id == Thread.owner_id)
    return (
        select(Run, Thread.owner_id, Thread.title, Agent.name)
        .join(Thread, Thread.id == Run.thread_id)
        .join(Agent, Agent.id == Thread.agent_id)
        .where(
            Run.thread_id.in_(thread_ids),
            Run.status.in_(("queued", "running")),
            startable,
            ~followed,
        )
    )


def forget_device(device_id: UUID) -> list[Any]:
    """APNs says the token is dead: the device and its queued pushes go."""
    return [
        delete(PushDelivery).where(PushDelivery.device_id == device_id),
        delete(Device).where(Device.id == device_id),
    ]


def end_activity(activity_id: UUID, now: datetime) -> Any:
    return update(LiveActivity).where(LiveActivity.id == activity_id).values(ended_at=now)


def prune(before: datetime) -> list[Any]:
    """Delivered or given-up pushes and fanned-out events past their use."""
    return [
        delete(PushDelivery).where(
            PushDelivery.status.in_(("sent", "failed")), PushDelivery.updated_at < before
        ),
        delete(PushEvent).where(PushEvent.fanned_out_at < before),
        delete(PushEvent).where(PushEvent.dead_at < before),
        delete(LiveActivity).where(LiveActivity.ended_at < before),
    ]
