"""Push events -> deliveries: who gets what, decided after commit.

Ended runs marked `push_due` become `run_ended` events first. An event becomes one delivery per device of the thread's owner (alerts) or per open Live
Activity of its run (`end`), inserted with ON CONFLICT DO NOTHING on (event_key, token):
an event fanned out twice (two rows for one wait, a crash between two steps) still
reaches each token once. Alerts go only to a user with no live socket on the thread.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import PushDelivery, PushEvent, ThreadMessage
from app.db.upsert import dialect_insert
from app.lib.time import utcnow
from app.push import live_activities, payloads, presence, repository
from app.settings import Settings
from app.threads import activity as cell

logger = logging.getLogger(__name__)


async def fan_out(session: AsyncSession, settings: Settings, *, postgres: bool) -> int:
    """Fan out a batch of pending events (in the caller's transaction); how many."""
    promoted = await _promote_ended_runs(session, postgres)
    events = list(await session.scalars(repository.pending_events(postgres)))
    now = utcnow()
    rows: list[dict[str, Any]] = []
    for event in events:
        rows += await _deliveries(session, settings, event, now)
        event.fanned_out_at = now
    if rows:
        insert = dialect_insert(session, PushDelivery.__table__)
        await session.execute(
            insert.on_conflict_do_nothing(index_elements=["event_key", "token"]), rows
        )
    return max(len(events), promoted)


async def _promote_ended_runs(session: AsyncSession, postgres: bool) -> int:
    """Runs whose end is due for push (`runs.push_due`) become `run_ended` events, in this
    transaction: the flag and the event change together, so an end is fanned out once."""
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
        await session.flush()
    return len(runs)


async def _deliveries(
    session: AsyncSession, settings: Settings, event: PushEvent, now: datetime
) -> list[dict[str, Any]]:
    if event.kind == "test":
        devices = await session.scalars(repository.user_devices(event.user_id))
        return [_alert_row(event, d, payloads.test_alert(), None, 0, now) for d in devices]
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
    if alert is not None and not await presence.is_present(session, owner_id, event.thread_id):
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
        )
    return None


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
