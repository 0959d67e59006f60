"""Live Activities: register an ActivityKit token for a thread's run; update and end it.

While a run goes, `LiveActivityUpdater` sends `update` pushes with the widget's
content-state, throttled: changes mark the thread dirty (after commit, in the process
that wrote them), and a tick at most every LIVE_ACTIVITY_UPDATE_SECONDS per activity
sends the latest state; a state held back is sent at a later tick, and the run's end
(an `end` push with the final state and a dismissal date, app/push/fanout.py) always
follows, whatever way the run ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from uuid_utils.compat import uuid7

from app.db.models import LiveActivity, Run, Thread, User
from app.db.outbox import on_commit
from app.db.upsert import dialect_insert
from app.lib.time import utcnow
from app.push import payloads, repository
from app.settings import Settings
from app.threads import activity as cell
from app.threads import changes
from app.threads import repository as threads_repository
from app.threads.schemas import RunRead, ThreadMessageRead

logger = logging.getLogger(__name__)
ACTIVE = ("queued", "running")


def _aware(value: datetime) -> datetime:
    """SQLite hands back naive UTC datetimes."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


async def content_state(session: AsyncSession, run: Run, now: datetime) -> dict[str, Any]:
    """What the widget shows: run status, the current tool, cells done/total, elapsed."""
    messages = list(await session.scalars(threads_repository.run_tool_messages(run.id)))
    cells = [m.tool_activity or {} for m in messages]
    current = next((c for c in reversed(cells) if cell.is_open(c)), None)
    if current is None and cells:
        current = cells[-1]
    started = _aware(run.started_at) if run.started_at else None
    ended = _aware(run.finished_at) if run.finished_at else now
    return {
        "status": run.status,
        "toolName": (current or {}).get("name"),
        "toolStatus": (current or {}).get("status"),
        "displayMessage": (current or {}).get("display_message"),
        "cellsDone": sum(1 for c in cells if not cell.is_open(c)),
        "cellsTotal": len(cells),
        "elapsedSeconds": max(0, int((ended - started).total_seconds())) if started else 0,
    }


def delivery_row(
    settings: Settings,
    activity: LiveActivity,
    event_key: str,
    payload: dict[str, Any],
    *,
    priority: int,
    ttl: int,
    now: datetime,
) -> dict[str, Any]:
    return repository.pending_delivery(
        now,
        event_key=event_key,
        token=activity.push_token,
        live_activity_id=activity.id,
        environment=activity.environment,
        topic=payloads.live_activity_topic(settings.apns_topic or ""),
        push_type="liveactivity",
        priority=priority,
        expiration=int(now.timestamp()) + ttl,
        collapse_id=None,
        payload=payload,
    )


async def register(
    session: AsyncSession,
    settings: Settings,
    user: User,
    thread: Thread,
    push_token: str,
    environment: str | None,
) -> LiveActivity:
    """Follow the thread's current run, or its next one if none is active. Idempotent by
    token (re-registering it follows this thread's current run)."""
    latest = await session.scalar(repository.current_run(thread.id))
    run_id = latest.id if latest is not None and latest.status in ACTIVE else None
    now = utcnow()
    values = {
        "user_id": user.id,
        "thread_id": thread.id,
        "run_id": run_id,
        "environment": environment or settings.apns_environment,
        "last_state": None,
        "last_sent_at": None,
        "ended_at": None,
        "updated_at": now,
    }
    insert = dialect_insert(session, LiveActivity.__table__)
    statement = insert.values(
        id=uuid7(), push_token=push_token, updates_sent=0, created_at=now, **values
    ).on_conflict_do_update(index_elements=["push_token"], set_=values)
    await session.execute(statement)
    registered = await session.scalar(
        repository.activity_by_token(push_token).execution_options(populate_existing=True)
    )
    assert registered is not None
    on_commit(session, partial(changes_seen, thread.id))  # its first state, once it is stored
    return registered


# -- the updater --------------------------------------------------------------------------
_dirty: set[UUID] = set()
_updaters: list[LiveActivityUpdater] = []


def changes_seen(thread_id: UUID) -> None:
    if _updaters:
        _dirty.add(thread_id)
        for updater in _updaters:
            updater.poke()


class _Changes(changes.ChangeSink):
    """Marks threads whose run or cells changed (after commit, in the writing process)."""

    def message_changed(self, message: ThreadMessageRead) -> None:
        if message.tool_activity is not None:
            changes_seen(message.thread_id)

    def run_changed(self, run: RunRead) -> None:
        changes_seen(run.thread_id)


class LiveActivityUpdater:
    def __init__(
        self, settings: Settings, sessions: async_sessionmaker[AsyncSession], wake_sender: Any
    ) -> None:
        self._settings, self._sessions, self._wake_sender = settings, sessions, wake_sender
        self._interval = settings.live_activity_update_seconds
        self._poked = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._sink = _Changes()

    def poke(self) -> None:
        self._poked.set()

    def start(self) -> None:
        _updaters.append(self)
        changes.register(self._sink)
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        changes.unregister(self._sink)
        if self in _updaters:
            _updaters.remove(self)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            await self._poked.wait()
            self._poked.clear()
            try:
                held_back = await self.tick()
            except Exception:
                logger.warning("Live Activity updates failed; retrying", exc_info=True)
                held_back = True
            if held_back:  # come back when the throttle allows the held-back state
                await asyncio.sleep(self._interval / 2)
                self._poked.set()

    async def tick(self) -> bool:
        """Send the latest state of every open activity of a dirty thread the throttle
        allows; True if some state waits for a later tick."""
        threads = list(_dirty)
        _dirty.difference_update(threads)
        if not threads:
            return False
        now, held_back, rows = utcnow(), False, []
        async with self._sessions() as session:
            for activity in await session.scalars(repository.open_activities(threads)):
                row, waiting = await self._update(session, activity, now)
                rows += [row] if row else []
                if waiting:
                    held_back = True
                    _dirty.add(activity.thread_id)
            await repository.insert_deliveries(session, rows)
            await session.commit()
        if rows:
            self._wake_sender()
        return held_back

    async def _update(
        self, session: AsyncSession, activity: LiveActivity, now: datetime
    ) -> tuple[dict[str, Any] | None, bool]:
        run = await self._run_of(session, activity)
        if run is None or run.status not in ACTIVE:
            return None, False  # not started yet, or ended: the end push is the fan-out's
        state = await content_state(session, run, now)
        if activity.last_state is not None and _same(activity.last_state, state):
            return None, False
        last = activity.last_sent_at
        if last is not None and now - _aware(last) < timedelta(seconds=self._interval):
            return None, True
        activity.updates_sent += 1
        activity.last_state, activity.last_sent_at = state, now
        key = f"la:{activity.id}:{activity.updates_sent}"
        payload = payloads.live_activity("update", state)
        ttl = payloads.LIVE_ACTIVITY_UPDATE_TTL_SECONDS
        return delivery_row(
            self._settings, activity, key, payload, priority=5, ttl=ttl, now=now
        ), False

    @staticmethod
    async def _run_of(session: AsyncSession, activity: LiveActivity) -> Run | None:
        if activity.run_id is not None:
            return await session.scalar(repository.run_of(activity.run_id))
        run = await session.scalar(repository.current_run(activity.thread_id))
        if run is not None and run.status in ACTIVE:
            activity.run_id = run.id  # the next run has come: follow it
            return run
        return None


def _same(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Equal but for the elapsed time (it alone is no reason to spend the push budget)."""
    ignore = {"elapsedSeconds"}
    return {k: v for k, v in before.items() if k not in ignore} == {
        k: v for k, v in after.items() if k not in ignore
    }
