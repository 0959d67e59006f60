"""One sender cycle holding deliveries of every kind, and a failing event next to good ones.

The sender runs here without a server (push is off in the session app): its cycle is
called directly, against a recording APNs client, so nothing else competes for the rows.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from uuid_utils.compat import uuid7

from app.db import clock
from app.db.models import (
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
from app.lib.time import utcnow
from app.push import events, fanout, live_activities
from app.push.apns import Answer, Notification, Verdict
from app.push.sender import PushSender
from app.settings import Settings
from app.threads import activity as cell
from tests.conftest import ApiUser
from tests.push.conftest import BUNDLE
from tests.support.rows import new_run, new_threads

MAX_ATTEMPTS = 2


@dataclass
class RecordingApns:
    """Answers every push 200 and keeps it."""

    sent: list[Notification] = field(default_factory=list)

    async def send(self, note: Notification) -> Answer:
        self.sent.append(note)
        return Answer(Verdict.SENT, 200, None)

    def kinds(self) -> list[str]:
        return sorted(_kind(note) for note in self.sent)


def _kind(note: Notification) -> str:
    if note.push_type == "liveactivity":
        return f"liveactivity:{note.payload['aps']['event']}"
    return f"alert:{note.payload['kind']}"


@pytest.fixture
def push_settings(settings: Settings) -> Settings:
    return Settings(
        database_url=settings.database_url,
        runner_enabled=False,
        database_max_connections=10,
        apns_topic=BUNDLE,
        push_max_attempts=MAX_ATTEMPTS,
        push_retry_base_seconds=60.0,  # a failed event is not due again within the test
    )


@pytest.fixture
def apns() -> RecordingApns:
    return RecordingApns()


@pytest.fixture
def sender(
    push_settings: Settings,
    session_factory: async_sessionmaker[AsyncSession],
    apns: RecordingApns,
    dialect: str,
) -> PushSender:
    client: Any = apns  # the sender's one use of its client: `send`
    return PushSender(push_settings, session_factory, client, postgres=dialect == "postgresql")


async def _thread(db: AsyncSession, user: ApiUser) -> Thread:
    [thread] = await new_threads(db, user)
    return thread


async def _run(db: AsyncSession, thread: Thread, status: str, **fields: Any) -> Run:
    return await new_run(db, thread, status=status, started_at=utcnow(), **fields)


async def _activity(db: AsyncSession, user: ApiUser, thread: Thread, run: Run) -> LiveActivity:
    activity = LiveActivity(
        user_id=user.user.id,
        thread_id=thread.id,
        run_id=run.id,
        push_token=secrets.token_hex(40),
        environment="sandbox",
    )
    db.add(activity)
    await db.flush()
    return activity


async def _waiting(
    db: AsyncSession, thread: Thread, run: Run, seq: int, activity: dict[str, Any]
) -> PushEvent:
    """A tool message waiting for the user, and the event its write adds."""
    message = ThreadMessage(
        thread_id=thread.id,
        run_id=run.id,
        position=seq,
        seq=seq,
        role="tool",
        tool_activity=activity,
    )
    db.add(message)
    await db.flush()
    event = PushEvent(
        kind="tool_waiting",
        event_key=f"wait:{message.id}:{activity['status']}",
        thread_id=thread.id,
        run_id=run.id,
        message_id=message.id,
        seq=seq,
        data={"status": activity["status"], "tool_name": activity["name"]},
    )
    db.add(event)
    await db.flush()
    return event


def _failures(outcome: str) -> float:
    labels = {"outcome": outcome}
    return REGISTRY.get_sample_value("toolcells_push_event_failures_total", labels) or 0.0


async def _device(db: AsyncSession, user: ApiUser) -> Device:
    device = Device(
        user_id=user.user.id, token=secrets.token_hex(32), environment="sandbox", bundle_id=BUNDLE
    )
    db.add(device)
    await db.flush()
    return device


async def test_every_kind_of_delivery_in_one_cycle(
    db: AsyncSession,
    alice: ApiUser,
    sender: PushSender,
    apns: RecordingApns,
    push_settings: Settings,
    session_factory: async_sessionmaker[AsyncSession],
) -> None:
    device = await _device(db, alice)
    ended_thread, going_thread = await _thread(db, alice), await _thread(db, alice)
    ended = await _run(db, ended_thread, "completed", finished_at=utcnow(), push_due=True)
    going = await _run(db, going_thread, "running")
    ending = await _activity(db, alice, ended_thread, ended)
    updating = await _activity(db, alice, going_thread, going)
    approval = cell.started("c1", "test_confirm", {}, approval_ttl=600)
    await _waiting(db, going_thread, going, 1, approval)
    device_call = cell.started("c2", "device_location", {}, device_ttl=600)
    await _waiting(db, going_thread, going, 2, device_call)
    elsewhere = await _thread(db, alice)  # a run no activity follows: push-to-start
    await _run(db, elsewhere, "running")
    start = LiveActivityStartToken(
        user_id=alice.user.id, token=secrets.token_hex(40), environment="sandbox"
    )
    db.add(start)
    await db.commit()
    updater = live_activities.LiveActivityUpdater(push_settings, session_factory, sender.wake)
    live_activities._dirty.update({going_thread.id, elsewhere.id})  # as the runner's writes
    await updater.tick()  # Live Activity update and start rows, waiting with the rest

    await sender.cycle()

    assert apns.kinds() == [
        "alert:approval_request",
        "alert:device_request",
        "alert:run_completed",
        "liveactivity:end",
        "liveactivity:start",
        "liveactivity:update",
    ]
    by_token = {note.token: note for note in apns.sent if note.push_type == "liveactivity"}
    assert by_token[ending.push_token].payload["aps"]["event"] == "end"
    assert by_token[updating.push_token].payload["aps"]["event"] == "update"
    assert by_token[start.token].payload["aps"]["attributes"]["threadId"] == str(elsewhere.id)
    assert {n.token for n in apns.sent if n.push_type == "alert"} == {device.token}
    db.expire_all()
    assert all(e.fanned_out_at for e in await db.scalars(select(PushEvent)))
    statuses = set(await db.scalars(select(PushDelivery.status)))
    assert statuses == {"sent"}


async def test_a_failing_event_is_retried_then_dead_lettered_and_never_blocks_others(
    db: AsyncSession,
    alice: ApiUser,
    sender: PushSender,
    apns: RecordingApns,
    caplog: pytest.LogCaptureFixture,
) -> None:
    await _device(db, alice)
    thread = await _thread(db, alice)
    run = await _run(db, thread, "running")
    good = cell.started("c1", "test_confirm", {}, approval_ttl=600)
    await _waiting(db, thread, run, 1, good)
    # Bad data: an expiry no one can read makes this event's fan-out raise.
    bad = cell.started("c2", "test_confirm", {}, approval_ttl=600) | {"expires_at": "soon"}
    poison_id = (await _waiting(db, thread, run, 2, bad)).id
    await db.commit()
    retries, dead = _failures("retry"), _failures("dead_lettered")

    await sender.cycle()

    assert apns.kinds() == ["alert:approval_request"]  # the good one went
    failed = await _event(db, poison_id)
    assert failed.attempts == 1 and failed.fanned_out_at is None
    assert failed.next_attempt_at is not None and failed.dead_at is None
    assert "ValueError" in (failed.last_error or "")
    assert _failures("retry") == retries + 1
    await sender.cycle()  # not due yet: not tried again
    assert (await _event(db, poison_id)).attempts == 1

    await _make_due(db, poison_id)
    await _run(db, thread, "completed", finished_at=utcnow(), push_due=True)
    await db.commit()
    with caplog.at_level(logging.ERROR, logger="app.push.fanout"):
        await sender.cycle()
    failed = await _event(db, poison_id)
    assert failed.attempts == MAX_ATTEMPTS and failed.dead_at is not None
    assert _failures("dead_lettered") == dead + 1
    assert any("dead-lettered" in r.getMessage() for r in caplog.records)
    assert apns.kinds() == ["alert:approval_request", "alert:run_completed"]  # the later one

    await _make_due(db, poison_id)
    await sender.cycle()  # a dead letter is never tried again
    assert (await _event(db, poison_id)).attempts == MAX_ATTEMPTS


async def test_a_bad_reminder_fails_alone_and_the_rest_of_its_batch_goes(
    db: AsyncSession, alice: ApiUser, sender: PushSender, apns: RecordingApns
) -> None:
    """Reminders are fanned out a batch per transaction: one whose data no one can read
    rolls its batch back, the batch is redone one by one, and only that one waits."""
    await _device(db, alice)
    tasks = [Task(owner_id=alice.user.id, title=f"Task {i}") for i in range(3)]
    db.add_all(tasks)
    await db.flush()
    for task in tasks:
        events.task_reminder(db, task.id, alice.user.id, utcnow(), late=False)
    data = {"task_id": str(tasks[0].id), "remind_at": "soon"}
    poison = PushEvent(kind="task_reminder", event_key="reminder:bad", data=data)
    db.add(poison)
    await db.commit()

    await sender.cycle()

    assert sorted(n.payload["task_id"] for n in apns.sent) == sorted(str(t.id) for t in tasks)
    failed = await _event(db, poison.id)
    assert failed.attempts == 1 and failed.fanned_out_at is None
    assert "ValueError" in (failed.last_error or "")


async def _event(db: AsyncSession, event_id: UUID) -> PushEvent:
    """The event as the sender left it (not the session's older copy)."""
    query = select(PushEvent).where(PushEvent.id == event_id)
    event = await db.scalar(query.execution_options(populate_existing=True))
    assert event is not None
    return event


async def _make_due(db: AsyncSession, event_id: UUID) -> None:
    """Move the retry into the past instead of waiting out the backoff."""
    past = utcnow() - timedelta(seconds=1)
    await db.execute(update(PushEvent).where(PushEvent.id == event_id).values(next_attempt_at=past))
    await db.commit()


def test_rows_of_every_kind_carry_the_full_key_set(push_settings: Settings) -> None:
    """One executemany takes its columns from the first row: every kind has them all."""
    now = utcnow()
    event = PushEvent(kind="test", event_key="test:1")
    device = Device(id=uuid7(), token="ab" * 32, environment="sandbox", bundle_id=BUNDLE)
    activity = LiveActivity(id=uuid7(), push_token="cd" * 40, environment="sandbox")
    alert = fanout._alert_row(event, device, {"aps": {}}, None, 0, now)
    live = live_activities.delivery_row(
        push_settings, activity, "la:1", {"aps": {}}, priority=5, ttl=60, now=now
    )
    columns = {column.name for column in PushDelivery.__table__.columns} - {"sa_orm_sentinel"}
    assert alert.keys() == live.keys() == columns


async def _waiting_with_reminder(
    db: AsyncSession, thread: Thread, run: Run, seq: int, name: str
) -> ThreadMessage:
    """A tool message waiting an hour for approval, its events written as the hook does."""
    message = ThreadMessage(
        thread_id=thread.id,
        run_id=run.id,
        position=seq,
        seq=seq,
        role="tool",
        tool_activity=cell.started(f"c{seq}", name, {}, approval_ttl=3600),
    )
    db.add(message)
    await db.flush()
    events.tool_waits(db, message)
    await db.commit()
    return message


async def _reminders_due(db: AsyncSession) -> None:
    """Bring the reminders' time forward instead of waiting for it."""
    past = utcnow() - timedelta(seconds=1)
    await db.execute(
        update(PushEvent)
        .where(PushEvent.event_key.startswith("remind:"))
        .values(next_attempt_at=past)
    )
    await db.commit()


async def test_a_wait_still_open_is_recalled_before_it_expires_an_answered_one_is_not(
    db: AsyncSession, alice: ApiUser, sender: PushSender, apns: RecordingApns
) -> None:
    await _device(db, alice)
    thread = await _thread(db, alice)
    run = await _run(db, thread, "running")
    waiting = await _waiting_with_reminder(db, thread, run, 1, "still_waiting")
    answered = await _waiting_with_reminder(db, thread, run, 2, "answered")
    reminder = await db.scalar(
        select(PushEvent).where(PushEvent.event_key == f"remind:{waiting.id}:awaiting_approval")
    )
    expires = cell.expires_at(waiting.tool_activity)
    assert reminder is not None and expires is not None
    remind_at = reminder.next_attempt_at
    assert remind_at is not None
    remind_at = remind_at.replace(tzinfo=expires.tzinfo) if remind_at.tzinfo is None else remind_at
    assert expires - timedelta(seconds=901) < remind_at < expires  # a quarter of the hour

    await sender.cycle()  # the first alerts; the reminders are not due
    assert [n.payload["reminder"] for n in apns.sent] == [False, False]
    answered.tool_activity = cell.approved(answered.tool_activity or {})
    await db.commit()
    await _reminders_due(db)
    await sender.cycle()

    (recall,) = apns.sent[2:]
    assert recall.payload["reminder"] is True
    assert recall.payload["message_id"] == str(waiting.id)
    assert recall.payload["aps"]["alert"]["loc-key"] == "APPROVAL_REQUEST_REMINDER_BODY"


def test_no_reminder_for_a_short_wait_or_one_without_end() -> None:
    now = utcnow()
    assert events.reminder_at(None, now) is None
    assert events.reminder_at(now + timedelta(seconds=60), now) is None
    a_week = now + timedelta(days=7)
    assert events.reminder_at(a_week, now) == a_week - timedelta(hours=1)


async def test_a_host_ahead_of_the_database_sends_what_it_fans_out_in_the_same_cycle(
    db: AsyncSession,
    alice: ApiUser,
    sender: PushSender,
    apns: RecordingApns,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """This host's clock runs ahead of the database's (a measured offset, or its error
    under load): the deliveries a fan-out makes are due on the database's clock, the one
    the claim reads, not on the host's, so the same cycle sends them (before: stamped on
    the host's clock, they were seconds in the claim's future and waited)."""
    await _device(db, alice)
    thread = await _thread(db, alice)
    run = await _run(db, thread, "running")
    await _waiting(db, thread, run, 1, cell.started("c1", "test_confirm", {}, approval_ttl=600))
    await db.commit()
    database_behind = utcnow() - timedelta(seconds=30)
    monkeypatch.setattr(clock, "now", lambda: database_behind)
    await sender.cycle()
    assert apns.kinds() == ["alert:approval_request"]
