"""Push events -> deliveries: who gets what, decided after commit.

Ended runs marked `push_due` become `run_ended` events first. An event becomes one
delivery per device of the thread's owner (alerts) or per open Live Activity of its run
(`end`), inserted with ON CONFLICT DO NOTHING on (event_key, token): an event fanned out
twice (two rows for one wait, a crash between two steps) still reaches each token once.
Alerts go only to a user with no live socket on the thread.

Due events are fanned out a batch at a time, in one transaction (task reminders, which
come in bursts, with one read of their tasks and one of their owners' devices for the
whole batch): a transaction and a few statements per event cannot push a minute's
reminders within the minute. One event that fails (bad data, a row the database
refuses) cannot hold up the others: the batch rolls back and its events are fanned out
again one by one, each in a transaction of its own; the one that fails is retried after
a backoff (PUSH_RETRY_BASE_SECONDS, doubled), and after PUSH_MAX_ATTEMPTS it is
dead-lettered (`push_events.dead_at`), logged, and counted in
`toolcells_push_event_failures_total`.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db import clock
from app.db.models import Device, PushEvent, Task, ThreadMessage
from app.observability import metrics
from app.push import live_activities, payloads, presence, repository
from app.settings import Settings
from app.threads import activity as cell

logger = logging.getLogger(__name__)
MAX_BACKOFF_SECONDS = 3600.0
ERROR_CHARS = 1000  # of a failure's message kept on the event
# Events fanned out in one transaction: enough that a burst of reminders costs a few
# statements per hundred, few enough that building their rows is a short step of the loop
# and a batch redone one by one (an event in it failed) is soon done.
BATCH = 200


async def fan_out(
    sessions: async_sessionmaker[AsyncSession], settings: Settings, *, postgres: bool
) -> bool:
    """Fan out a batch of due events; True if a batch was full (call again)."""
    promoted = await _promote_ended_runs(sessions, postgres)
    taken = await _fan_out_batch(sessions, settings, postgres)
    return promoted == repository.BATCH or taken == BATCH


async def _promote_ended_runs(sessions: async_sessionmaker[AsyncSession], postgres: bool) -> int:
    """Runs whose end is due for push (`runs.push_due`) become `run_ended` events, in one
    transaction: the flag and the event change together, so an end is fanned out once."""
    async with sessions() as session:
        runs = list(await session.scalars(repository.due_runs(postgres)))
        for run in runs:
            session.add(
                PushEvent(
                    kind="run_ended",
                    event_key=f"run:{run.id}",
                    thread_id=run.thread_id,
                    run_id=run.id,
                    data={"status": run.status, "error": run.error},
                )
            )
        if runs:
            await session.execute(repository.clear_push_due([run.id for run in runs]))
            await session.commit()
    return len(runs)


async def _fan_out_batch(
    sessions: async_sessionmaker[AsyncSession], settings: Settings, postgres: bool
) -> int:
    """Fan out up to BATCH due events in one transaction; how many were taken. If one of
    them fails, the batch rolls back and as many events are fanned out one by one, so
    that the failure is recorded on its own event and the others go."""
    now, taken = clock.now(), 0
    try:
        async with sessions() as session:
            batch = list(await session.scalars(repository.due_events(postgres, now, BATCH)))
            taken = len(batch)
            if batch:
                await _fan_out_events(session, settings, batch, now)
                await session.commit()
            return taken
    except Exception:
        if not taken:
            raise  # no event was taken: the database itself is away (the next poll retries)
        logger.info("a batch of %d push events failed: fanning them out one by one", taken)
    done = 0
    while done < taken and await _fan_out_next(sessions, settings, postgres):
        done += 1
    return done


async def _fan_out_events(
    session: AsyncSession, settings: Settings, batch: list[PushEvent], now: datetime
) -> None:
    reminders = [event for event in batch if event.kind == "task_reminder"]
    rows = await _task_reminders(session, settings, reminders, now)
    for event in batch:
        if event.kind != "task_reminder":
            rows += await _deliveries(session, settings, event, now)
    await repository.insert_deliveries(session, rows)
    await session.execute(repository.mark_fanned_out([event.id for event in batch], now))


async def _fan_out_next(
    sessions: async_sessionmaker[AsyncSession], settings: Settings, postgres: bool
) -> bool:
    """Fan out the oldest due event; False if there is none. A failure of that event is
    recorded on it (retry or dead letter) and does not propagate: the next one goes on."""
    now, event_id = clock.now(), None
    try:
        async with sessions() as session:
            event = await session.scalar(repository.due_events(postgres, now, 1))
            if event is None:
                return False
            event_id = event.id
            rows = await _deliveries(session, settings, event, now)
            await repository.insert_deliveries(session, rows)
            event.fanned_out_at = now
            await session.commit()
    except Exception as error:
        if event_id is None:
            raise  # no event was taken: the database itself is away (the next poll retries)
        await _record_failure(sessions, settings, event_id, error)
    return True


async def _record_failure(
    sessions: async_sessionmaker[AsyncSession],
    settings: Settings,
    event_id: UUID,
    error: Exception,
) -> None:
    """The event's fan-out rolled back: count the attempt, then retry it after a backoff
    or, its attempts spent, dead-letter it."""
    now = clock.now()
    async with sessions() as session:
        event = await session.get(PushEvent, event_id)
        if event is None:
            return  # pruned, or its thread deleted meanwhile: nothing left to send
        event.attempts += 1
        event.last_error = f"{type(error).__name__}: {error}"[:ERROR_CHARS]
        if event.attempts >= settings.push_max_attempts:
            event.dead_at = now
            logger.error(
                "push event %s (%s) dead-lettered after %d failed fan-outs: %s",
                event.event_key,
                event.kind,
                event.attempts,
                event.last_error,
            )
            outcome = "dead_lettered"
        else:
            event.next_attempt_at = now + timedelta(seconds=_backoff(settings, event.attempts))
            logger.warning(
                "push event %s (%s) fan-out failed (attempt %d), retrying: %s",
                event.event_key,
                event.kind,
                event.attempts,
                event.last_error,
                exc_info=error,
            )
            outcome = "retry"
        await session.commit()
    metrics.push_event_failed(outcome)


def _backoff(settings: Settings, attempts: int) -> float:
    return min(MAX_BACKOFF_SECONDS, settings.push_retry_base_seconds * 2 ** (attempts - 1))


async def _deliveries(
    session: AsyncSession, settings: Settings, event: PushEvent, now: datetime
) -> list[dict[str, Any]]:
    if event.kind == "test":
        devices = await session.scalars(repository.user_devices(event.user_id))
        return [_alert_row(event, d, payloads.test_alert(), None, 0, now) for d in devices]
    if event.kind == "task_reminder":
        return await _task_reminders(session, settings, [event], now)
    if event.thread_id is None:
        return []
    heading = (await session.execute(repository.thread_heading(event.thread_id))).first()
    if heading is None:
        return []  # the thread is gone
    owner_id, title, agent_name, last_seq = heading
    title = title or agent_name
    rows: list[dict[str, Any]] = []
    if event.kind == "run_ended":
        rows += await _end_live_activities(session, settings, event, now)
    alert = await _alert(session, event, title, last_seq)
    watching = event.kind != "schedule_paused" and await presence.is_present(
        session, owner_id, event.thread_id
    )
    if alert is not None and not watching:
        for device in await session.scalars(repository.user_devices(owner_id)):
            rows.append(
                _alert_row(event, device, alert.payload, alert.collapse_id, alert.expiration, now)
            )
    return rows


async def _alert(
    session: AsyncSession, event: PushEvent, title: str, last_seq: int
) -> payloads.Alert | None:
    data = event.data or {}
    if event.kind == "run_ended" and event.run_id is not None:
        if data.get("status") == "completed":
            answer = await session.scalar(repository.run_answer(event.run_id))
            return payloads.run_completed(
                thread_id=event.thread_id,
                run_id=event.run_id,
                message_id=answer.id if answer else None,
                seq=answer.seq if answer else last_seq,
                title=title,
                answer=answer.content if answer else None,
            )
        if data.get("status") == "failed":
            return payloads.run_failed(
                thread_id=event.thread_id,
                run_id=event.run_id,
                seq=last_seq,
                title=title,
                error=data.get("error"),
            )
        return None  # cancelled: the user did it
    if event.kind == "schedule_paused":
        return payloads.schedule_paused(
            thread_id=event.thread_id, schedule_id=data["schedule_id"], seq=last_seq, title=title
        )
    if event.kind == "tool_waiting" and event.message_id is not None:
        message = await session.get(ThreadMessage, event.message_id)
        if message is None or cell.status_of(message.tool_activity) != data.get("status"):
            return None  # decided (or answered) before we got here: nothing to ask
        return payloads.tool_waiting(
            thread_id=event.thread_id,
            run_id=event.run_id,
            message_id=event.message_id,
            seq=event.seq,
            title=title,
            status=data.get("status") or "awaiting_approval",
            tool_name=data.get("tool_name") or "",
            expires_at=cell.expires_at(message.tool_activity),
            reminder=bool(data.get("reminder")),
        )
    return None


async def _task_reminders(
    session: AsyncSession, settings: Settings, events: list[PushEvent], now: datetime
) -> list[dict[str, Any]]:
    """To every device of each owner, watching or not (a reminder is no thread's news);
    nothing for a task completed or deleted since the claim. Two reads for all."""
    if not events:
        return []
    task_ids = [UUID((event.data or {})["task_id"]) for event in events]
    tasks = {task.id: task for task in await session.scalars(repository.tasks(task_ids))}
    devices: dict[UUID, list[Device]] = defaultdict(list)
    owners = {task.owner_id for task in tasks.values()}
    for device in await session.scalars(repository.users_devices(owners)):
        devices[device.user_id].append(device)
    rows: list[dict[str, Any]] = []
    for event, task_id in zip(events, task_ids, strict=True):
        task = tasks.get(task_id)
        if task is not None and task.status == "active":
            rows += _reminder_rows(settings, event, task, devices[task.owner_id], now)
    return rows


def _reminder_rows(
    settings: Settings, event: PushEvent, task: Task, devices: list[Device], now: datetime
) -> list[dict[str, Any]]:
    data = event.data or {}
    remind_at = datetime.fromisoformat(data["remind_at"])
    lateness = timedelta(seconds=settings.reminder_max_lateness_seconds)
    alert = payloads.task_reminder(
        task_id=task.id,
        title=task.title,
        due_at=task.due_at,
        remind_at=remind_at,
        late=bool(data.get("late")),
        thread_id=task.thread_id,
        expiration=int(max(remind_at + lateness, now + timedelta(minutes=1)).timestamp()),
    )
    return [
        _alert_row(event, d, alert.payload, alert.collapse_id, alert.expiration, now)
        for d in devices
    ]


def _alert_row(
    event: PushEvent,
    device: Any,
    payload: dict[str, Any],
    collapse: str | None,
    expiration: int,
    now: datetime,
) -> dict[str, Any]:
    return repository.pending_delivery(
        now,
        event_key=event.event_key,
        token=device.token,
        device_id=device.id,
        environment=device.environment,
        topic=device.bundle_id,
        push_type="alert",
        priority=10,
        expiration=expiration,
        collapse_id=collapse,
        payload=payload,
    )


async def _end_live_activities(
    session: AsyncSession, settings: Settings, event: PushEvent, now: datetime
) -> list[dict[str, Any]]:
    """The run ended (however): each Live Activity following it gets `end`, final state."""
    assert event.thread_id is not None and event.run_id is not None
    activities = list(
        await session.scalars(repository.activities_of_run(event.thread_id, event.run_id))
    )
    run = await session.scalar(repository.run_of(event.run_id)) if activities else None
    if run is None:
        return []
    state = await live_activities.content_state(session, run, now)
    dismissal = int((now + timedelta(seconds=settings.live_activity_dismiss_seconds)).timestamp())
    payload = payloads.live_activity("end", state, dismissal_date=dismissal)
    rows = []
    for activity in activities:
        activity.run_id, activity.ended_at, activity.last_state = run.id, now, state
        rows.append(
            live_activities.delivery_row(
                settings,
                activity,
                f"la-end:{run.id}",
                payload,
                priority=10,
                ttl=payloads.LIVE_ACTIVITY_END_TTL_SECONDS,
                now=now,
            )
        )
    return rows
