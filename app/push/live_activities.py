"""Live Activities: register an ActivityKit token for a thread's run (or one run); update
and end it; list, end and unregister them for the app; start one by push.

While a run goes, `LiveActivityUpdater` sends `update` pushes with the widget's
content-state, throttled: changes mark the thread dirty (after commit, in the process
that wrote them), and a tick at most every LIVE_ACTIVITY_UPDATE_SECONDS per activity
sends the latest state; a state held back is sent at a later tick, and the run's end
(an `end` push with the final state and a dismissal date, app/push/fanout.py) always
follows, whatever way the run ends. The app may end one itself (`end`, with its final
state) or unregister it. Push-to-start (iOS 17.2+): each install registers its start token
once; a run of its user that no activity follows and nobody watches gets a `start` push
at the updater's tick, and the app registers the new activity's token for that run.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from uuid_utils.compat import uuid7

from app.db import clock
from app.db.models import LiveActivity, LiveActivityStartToken, Run, Thread, User
from app.db.outbox import on_commit
from app.db.upsert import dialect_insert
from app.lib.background import BackgroundService
from app.lib.listeners import Listeners
from app.lib.problems import ProblemException
from app.push import events, payloads, presence, repository
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


def start_row(
    settings: Settings,
    token: LiveActivityStartToken,
    run_id: UUID,
    payload: dict[str, Any],
    now: datetime,
) -> dict[str, Any]:
    """A push-to-start delivery: addressed to the install's start token, not to an
    activity (none exists yet)."""
    return repository.pending_delivery(
        now,
        event_key=f"la-start:{run_id}",
        token=token.token,
        environment=token.environment,
        topic=payloads.live_activity_topic(settings.apns_topic or ""),
        push_type="liveactivity",
        priority=10,
        expiration=int(now.timestamp()) + payloads.LIVE_ACTIVITY_UPDATE_TTL_SECONDS,
        payload=payload,
    )


async def register(
    session: AsyncSession,
    settings: Settings,
    user: User,
    thread: Thread,
    push_token: str,
    environment: str | None,
    run: Run | None = None,
) -> LiveActivity:
    """Follow `run` (scope `run`: that run only), or else the thread's current run, or its
    next one if none is active (scope `thread`). Idempotent by token (registering it again
    follows what this call says)."""
    if run is not None:
        run_id, scope = run.id, "run"
    else:
        latest = await session.scalar(repository.current_run(thread.id))
        run_id = latest.id if latest is not None and latest.status in ACTIVE else None
        scope = "thread"
    now = clock.now()
    values = {
        "user_id": user.id,
        "thread_id": thread.id,
        "run_id": run_id,
        "scope": scope,
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


async def get_owned(session: AsyncSession, user: User, activity_id: UUID) -> LiveActivity:
    activity = await session.scalar(repository.owned_activity(user.id, activity_id))
    if activity is None:
        raise ProblemException(404, "Live Activity not found.")
    return activity


async def list_owned(
    session: AsyncSession, user: User, *, include_ended: bool, limit: int
) -> list[LiveActivity]:
    query = repository.user_activities(user.id, include_ended=include_ended, limit=limit)
    return list(await session.scalars(query))


async def end(
    session: AsyncSession,
    settings: Settings,
    activity: LiveActivity,
    state: dict[str, Any] | None,
    dismiss_at: datetime | None,
) -> LiveActivity:
    """The app ends the activity: one `end` push with the final state (the app's, else the
    followed run's now, else the last one sent) and its dismissal date."""
    if activity.ended_at is not None:
        raise ProblemException(409, "This Live Activity has already ended.")
    now = clock.now()
    state = state or await _current_state(session, activity, now)
    if state is None:
        raise ProblemException(
            409, "This Live Activity has followed no run yet: give its final content_state."
        )
    payload = payloads.live_activity(
        "end", state, dismissal_date=_dismissal(settings, dismiss_at, now)
    )
    key = f"la-end:{activity.id}:{int(now.timestamp() * 1000)}"  # one per end asked
    ttl = payloads.LIVE_ACTIVITY_END_TTL_SECONDS
    row = delivery_row(settings, activity, key, payload, priority=10, ttl=ttl, now=now)
    await repository.insert_deliveries(session, [row])
    activity.ended_at, activity.last_state = now, state
    await session.flush()
    events.wake_after_commit(session)
    return activity


async def _current_state(
    session: AsyncSession, activity: LiveActivity, now: datetime
) -> dict[str, Any] | None:
    run = await session.scalar(repository.run_of(activity.run_id)) if activity.run_id else None
    if run is not None:
        return await content_state(session, run, now)
    return activity.last_state


def _dismissal(settings: Settings, dismiss_at: datetime | None, now: datetime) -> int:
    """Epoch seconds for `dismissal-date` (a past one dismisses at once, as Apple says)."""
    if dismiss_at is None:
        dismiss_at = now + timedelta(seconds=settings.live_activity_dismiss_seconds)
    return int(dismiss_at.timestamp())


async def unregister(session: AsyncSession, activity: LiveActivity) -> None:
    """No more pushes to this token: the registration and its queued pushes go."""
    for statement in repository.forget_activity(activity.id):
        await session.execute(statement)


async def register_start_token(
    session: AsyncSession, settings: Settings, user: User, token: str, environment: str | None
) -> LiveActivityStartToken:
    """Idempotent by token (one per app install; a token another account registered moves
    to this one); a user keeps the newest START_TOKENS_PER_USER."""
    now = clock.now()
    values = {
        "user_id": user.id,
        "environment": environment or settings.apns_environment,
        "updated_at": now,
    }
    insert = dialect_insert(session, LiveActivityStartToken.__table__)
    statement = insert.values(id=uuid7(), token=token, created_at=now, **values)
    await session.execute(statement.on_conflict_do_update(index_elements=["token"], set_=values))
    await session.execute(repository.start_tokens_beyond_limit(user.id))
    registered = await session.scalar(
        repository.start_token_by_token(token).execution_options(populate_existing=True)
    )
    assert registered is not None
    return registered


async def delete_start_token(session: AsyncSession, user: User, token_id: UUID) -> None:
    token = await session.scalar(repository.owned_start_token(user.id, token_id))
    if token is None:
        raise ProblemException(404, "Push-to-start token not found.")
    await session.execute(repository.forget_start_token(token.token))


# -- the updater --------------------------------------------------------------------------
_dirty: set[UUID] = set()
_updaters: Listeners[LiveActivityUpdater] = Listeners("Live Activity updater")


def changes_seen(thread_id: UUID) -> None:
    if _updaters:
        _dirty.add(thread_id)
        _updaters.emit("poke")


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
        self._sink = _Changes()
        self._service = BackgroundService(
            "push-live-activities",
            self._tick_then_wait,
            period=None,  # until poked
            logger=logger,
            failure="Live Activity updates failed; retrying",
            level=logging.WARNING,
            retry=self._interval / 2,
        )

    def poke(self) -> None:
        self._service.wake()

    def start(self) -> None:
        _updaters.add(self)
        changes.register(self._sink)
        self._service.start()

    async def stop(self) -> None:
        changes.unregister(self._sink)
        _updaters.remove(self)
        await self._service.stop()

    async def _tick_then_wait(self) -> float | None:
        """A tick; if some state was held back, come back when the throttle allows it."""
        return self._interval / 2 if await self.tick() else None

    async def tick(self) -> bool:
        """Send the latest state of every open activity of a dirty thread the throttle
        allows; True if some state waits for a later tick."""
        threads = list(_dirty)
        _dirty.difference_update(threads)
        if not threads:
            return False
        now, held_back, rows = clock.now(), False, []
        async with self._sessions() as session:
            for activity in await session.scalars(repository.open_activities(threads)):
                row, waiting = await self._update(session, activity, now)
                rows += [row] if row else []
                if waiting:
                    held_back = True
                    _dirty.add(activity.thread_id)
            rows += await self._starts(session, threads, now)
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

    async def _starts(
        self, session: AsyncSession, threads: list[UUID], now: datetime
    ) -> list[dict[str, Any]]:
        """Push-to-start: an active run no Live Activity follows, of a user with a
        push-to-start token who is not watching the thread (a run the app started itself
        is watched, and the app starts its own activity), starts one on each install.
        Once per run and token (the delivery's key), however often the thread changes."""
        rows = []
        for run, owner_id, title, agent_name in await session.execute(
            repository.runs_to_start(threads)
        ):
            if await presence.is_present(session, owner_id, run.thread_id):
                continue
            state = await content_state(session, run, now)
            payload = payloads.live_activity_start(
                state, thread_id=run.thread_id, run_id=run.id, title=title or agent_name
            )
            for token in await session.scalars(repository.user_start_tokens(owner_id)):
                rows.append(start_row(self._settings, token, run.id, payload, now))
        return rows

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
